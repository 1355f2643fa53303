// Seqs a relay pass read from a seq-keyed table, told apart from seqs a caller typed. An
// acknowledgement takes the former as they are stored, another writer's -1, 1.5 or 2^60
// included, while ackOutbox/ackSpawn go on refusing the latter unless they are seqs this
// module writes (safe non-negative integers). No SDK code: the relay loads this.

const fromTable = new WeakSet<readonly number[]>();

/** Marks `seqs` (a relay's batch of acknowledgements) as read from the table; returns it. */
export function readFromTable(seqs: number[]): number[] {
  fromTable.add(seqs);
  return seqs;
}

/** Whether `seqs` is a batch marked by {@linkcode readFromTable}. */
export function isReadFromTable(seqs: unknown): boolean {
  return Array.isArray(seqs) && fromTable.has(seqs);
}
