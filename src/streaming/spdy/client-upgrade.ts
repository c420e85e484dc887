/**
 * The client side of a SPDY/3.1 upgrade to a runtime's streaming server (containerd's): the
 * request with the subprotocol the kubelet speaks on the client's behalf, and the 101 read back.
 */
import type net from 'node:net';

/** The response head of the upgrade must fit in this. */
const MAX_RESPONSE_HEAD_BYTES = 16 * 1024;

/**
 * Sends the upgrade request for `protocol` and reads the response head; the socket is then the
 * runtime's SPDY peer, paused, and what came after the head is returned.
 */
export async function upgradeToSpdy(
  socket: net.Socket,
  method: string,
  target: URL,
  protocol: string,
): Promise<Buffer> {
  socket.write(
    `${method} ${target.pathname}${target.search} HTTP/1.1\r\nHost: ${target.host}\r\nConnection: Upgrade\r\n` +
      `Upgrade: SPDY/3.1\r\nX-Stream-Protocol-Version: ${protocol}\r\nContent-Length: 0\r\n\r\n`,
  );
  let head = Buffer.alloc(0);
  for (;;) {
    const chunk = await new Promise<Buffer>((resolve, reject) => {
      const fail = () => {
        socket.off('data', take);
        reject(new Error("the runtime's streaming server closed the connection"));
      };
      const take = (data: Buffer) => {
        socket.off('close', fail);
        resolve(data);
      };
      socket.once('data', take).once('close', fail);
    });
    head = Buffer.concat([head, chunk]);
    const end = head.indexOf('\r\n\r\n');
    if (end >= 0) {
      socket.pause();
      const status = /^HTTP\/1\.1 (\d{3})/.exec(head.toString('latin1', 0, end))?.[1];
      if (status !== '101')
        throw new Error(
          `the runtime's streaming server refused the upgrade: ${head.toString('utf8', 0, end).split('\r\n')[0]}`,
        );
      return head.subarray(end + 4);
    }
    if (head.length > MAX_RESPONSE_HEAD_BYTES) throw new Error("the runtime's streaming server sent no response head");
  }
}
