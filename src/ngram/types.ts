/** A proposal: the tokens that followed an earlier occurrence of the context's last `n` tokens. */
export type NgramMatch = {
  tokens: number[];
  /** How many trailing context tokens matched (longer means a more trustworthy proposal). */
  n: number;
  /** Key of the document or sequence the proposal was copied from. */
  source: string;
};

/** The range of n-gram lengths to try, longest first. */
export type NgramSizes = {
  minN: number;
  maxN: number;
};

export function assertValidSizes({ minN, maxN }: NgramSizes): void {
  if (!Number.isInteger(minN) || !Number.isInteger(maxN) || minN < 1 || maxN < minN) {
    throw new RangeError(`n-gram sizes need 1 <= minN <= maxN (got minN=${minN}, maxN=${maxN})`);
  }
}
