/**
 * A part of the agent another part needs before it can exist — a cycle in the wiring (the CPU
 * manager counts the sync loop's active pods, and the sync loop admits pods through the CPU
 * manager). Declared where it is first needed, bound once where the part is made; reading it
 * before that is a wiring error, named.
 */
export interface Later<T> {
  get(): T;
  set(value: T): void;
}

/** A late-bound part called `name` (for the error). */
export function later<T>(name: string): Later<T> {
  let bound = false;
  let value: T;
  return {
    get() {
      if (!bound) throw new Error(`the agent's ${name} was used before it was wired`);
      return value;
    },
    set(v) {
      if (bound) throw new Error(`the agent's ${name} was wired twice`);
      value = v;
      bound = true;
    },
  };
}
