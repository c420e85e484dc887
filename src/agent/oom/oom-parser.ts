/**
 * The kernel's OOM reports, read from its log (upstream's cAdvisor oomparser, which the Go kubelet's OOM watcher
 * uses). A report begins with "<task> invoked oom-killer:" and ends at the line that names the process killed: since
 * Linux 5.0 the summary "oom-kill:constraint=…,oom_memcg=…,task_memcg=…,task=…,pid=…,uid=…" of a memory cgroup's OOM,
 * else "… Killed process <pid> (<name>) …" (a global OOM's summary has no oom_memcg). Before 5.0 the cgroups came
 * from "Task in <cgroup> killed as a result of limit of <cgroup>". Pure.
 */

/** One OOM kill, as upstream's OomInstance. */
export interface OomInstance {
  /** The process killed, when the report named it. */
  pid: number;
  processName: string;
  /** The memory cgroup of the task that was killed. */
  containerName: string;
  /** The memory cgroup whose limit was hit: `/` for the whole machine (a system OOM). */
  victimContainerName: string;
  /** CONSTRAINT_NONE, CONSTRAINT_CPUSET, CONSTRAINT_MEMORY_POLICY or CONSTRAINT_MEMCG, when the report said. */
  constraint: string;
}

const FIRST_LINE = /invoked oom-killer:/;
const SUMMARY =
  /oom-kill:constraint=(.*),nodemask=(.*),cpuset=(.*),mems_allowed=(.*),oom_memcg=(.*),task_memcg=(.*),task=(.*),pid=(.*),uid=(.*)/;
const LEGACY_CGROUPS = /Task in (.*) killed as a result of limit of (.*)/;
const KILLED_PROCESS = /Killed process ([0-9]+) \((.+)\)/;

/** A cgroup path as Go's path.Join("/", p) cleans it. */
function rooted(path: string): string {
  const parts: string[] = [];
  for (const part of path.split('/')) {
    if (part === '' || part === '.') continue;
    if (part === '..') parts.pop();
    else parts.push(part);
  }
  return `/${parts.join('/')}`;
}

/** Reads the kernel's log messages in order and gives each OOM kill once its report is complete. */
export class OomParser {
  private current: OomInstance | undefined;

  /** Takes the next message; returns the OOM kill it completes, if it completes one. */
  push(message: string): OomInstance | undefined {
    const current = this.current;
    if (!current) {
      if (FIRST_LINE.test(message))
        this.current = { pid: 0, processName: '', containerName: '/', victimContainerName: '/', constraint: '' };
      return undefined;
    }
    const summary = SUMMARY.exec(message);
    if (summary) {
      Object.assign(current, {
        containerName: summary[6],
        victimContainerName: summary[5],
        constraint: summary[1],
        pid: Number.parseInt(summary[8], 10) || 0,
        processName: summary[7],
      });
      return this.complete();
    }
    const legacy = LEGACY_CGROUPS.exec(message);
    if (legacy) {
      current.containerName = rooted(legacy[1]);
      current.victimContainerName = rooted(legacy[2]);
    }
    const killed = KILLED_PROCESS.exec(message);
    if (!killed) return undefined;
    current.pid = Number.parseInt(killed[1], 10) || 0;
    current.processName = killed[2];
    return this.complete();
  }

  private complete(): OomInstance {
    const done = this.current!;
    this.current = undefined;
    return done;
  }
}

/**
 * The Node's SystemOOM event message for `oom` (upstream's OOM watcher), or undefined when it is not a system OOM: the
 * kubelet reports only the kills of an OOM of the whole machine, not those of a memory cgroup's limit (a container's
 * OOM is its status's OOMKilled).
 */
export function systemOomMessage(oom: OomInstance): string | undefined {
  if (oom.victimContainerName !== '/') return undefined;
  const message = 'System OOM encountered';
  return oom.processName !== '' && oom.pid !== 0
    ? `${message}, victim process: ${oom.processName}, pid: ${oom.pid}`
    : message;
}
