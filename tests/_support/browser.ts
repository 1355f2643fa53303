// A real browser for the dashboard's tests and screenshots: Debian's Chromium, headless, driven
// over the DevTools protocol by puppeteer-core, on a fresh profile that is removed afterwards.
// The flags keep Chromium from calling home (this machine's network refuses it).
import puppeteer, { type Browser } from "puppeteer-core";

/** Where Chromium is: `$HAREL_CHROMIUM`, else Debian's `/usr/bin/chromium`. */
export const CHROMIUM: string = Deno.env.get("HAREL_CHROMIUM") ?? "/usr/bin/chromium";

/**
 * A headless Chromium on a profile of its own; `await using` closes it and removes the profile.
 * `args`: more command-line flags (`--host-resolver-rules=...` to point a name at 127.0.0.1).
 */
export async function launchBrowser(args: string[] = []): Promise<Browser & AsyncDisposable> {
  try {
    await Deno.stat(CHROMIUM);
  } catch {
    throw new Error(
      `no Chromium at ${CHROMIUM}: install it (apt-get install -y chromium; .ci/run does) or set HAREL_CHROMIUM`,
    );
  }
  const profile = await Deno.makeTempDir({ prefix: "harel_chromium_" });
  const browser = await puppeteer.launch({
    executablePath: CHROMIUM,
    userDataDir: profile,
    args: [
      "--headless",
      "--no-sandbox",
      "--disable-gpu",
      "--disable-quic",
      "--no-first-run",
      "--disable-background-networking",
      "--disable-component-update",
      "--disable-sync",
      ...args,
    ],
  });
  return Object.assign(browser, {
    [Symbol.asyncDispose]: async () => {
      await browser.close();
      await Deno.remove(profile, { recursive: true }).catch(() => {});
    },
  });
}
