/**
 * A function of an object, remembered per object (in a WeakMap: forgotten with it). Only for
 * objects that are never changed in place, as a pod's spec: an update to a pod is a new object.
 */
export function memoByObject<K extends object, V>(f: (k: K) => V): (k: K) => V {
  const memo = new WeakMap<K, V>();
  return (k) => {
    if (memo.has(k)) return memo.get(k)!;
    const v = f(k);
    memo.set(k, v);
    return v;
  };
}
