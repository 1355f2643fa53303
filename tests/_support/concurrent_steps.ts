// Test cases that mostly wait (for an index's lag, a backoff, a re-send) run as concurrent steps
// of one test: waiting costs no CPU, so the test takes about as long as its slowest step.

/** A variant of a case (a lag, a store's options, a connection), run as a step of its own. */
export interface Variant {
  name: string;
  /** The variant, given its step's context (for steps of its own). */
  fn: (t: Deno.TestContext) => Promise<void>;
}

/**
 * Runs `variants` as steps of `t` at once, at most `width` at a time: each mostly waits (real
 * time, no CPU), so the case takes about as long as its slowest variant. Each is
 * reported on its own, and the test fails when any fails. (Deno runs steps at once only without
 * their sanitizers; the test's own still check what the steps left behind.)
 */
export async function concurrently(
  t: Deno.TestContext,
  variants: Variant[],
  width = variants.length,
): Promise<void> {
  let free = width;
  const waiting: (() => void)[] = [];
  const take = async () => {
    while (free === 0) await new Promise<void>((resolve) => waiting.push(resolve));
    free--;
  };
  const give = () => {
    free++;
    waiting.shift()?.();
  };
  await Promise.all(variants.map(({ name, fn }) =>
    t.step({
      name,
      sanitizeOps: false,
      sanitizeResources: false,
      sanitizeExit: false,
      fn: async (step) => {
        await take();
        try {
          await fn(step);
        } finally {
          give();
        }
      },
    })
  ));
}

/**
 * A test of `name` whose cases run as its steps at once ({@linkcode concurrently}, `width` at a
 * time): each call of the function it answers adds a case, in place of a `Deno.test` of its own.
 */
export function concurrentTest(
  name: string,
  width?: number,
): (name: string, fn: () => Promise<void>) => void {
  const cases: Variant[] = [];
  Deno.test(name, (t) => concurrently(t, cases, width));
  return (caseName, fn) => void cases.push({ name: caseName, fn: () => fn() });
}
