// What the browser tests and bench/web.mjs share: the page's server on a free
// port, Debian's Chromium through playwright-core (never a downloaded
// browser), and a page whose forge API is ready.
import {spawn} from "node:child_process";
import {dirname, join} from "node:path";
import {fileURLToPath} from "node:url";
import {chromium} from "playwright-core";

export const root = join(dirname(fileURLToPath(import.meta.url)), "..", "..");
export const fixtures = join(root, "tests", "fixtures");
const chromiumPath = process.env.FORGE_CHROMIUM || "/usr/lib/chromium/chromium";

// node web/serve.mjs on a free port -> {proc, url}.
export function startServer(models = fixtures) {
  return new Promise((resolve, reject) => {
    const p = spawn("node", [join(root, "web", "serve.mjs"), "--port", "0", "--models", models,
                             "--build", join(root, "build-wasm")], {stdio: ["ignore", "pipe", "inherit"]});
    p.stdout.on("data", (d) => {
      const m = /http:\/\/127\.0\.0\.1:(\d+)\//.exec(String(d));
      if (m) resolve({proc: p, url: m[0]});
    });
    p.on("exit", (code) => reject(new Error(`the page's server exited with ${code}`)));
  });
}

// Headless Chromium, with WebGPU (on SwiftShader where there is no GPU) or without.
export function launch({webgpu = true} = {}) {
  return chromium.launch({executablePath: chromiumPath,
                          args: webgpu ? ["--enable-unsafe-webgpu", "--no-sandbox"] : ["--no-sandbox"]});
}

export async function openPage(browser, url) {
  const page = await browser.newPage({viewport: {width: 1200, height: 900}});
  page.on("pageerror", (e) => console.log(`page error: ${e.message}`));
  await page.goto(url);
  await page.waitForFunction(() => window.forgePage && window.forgePage.ready, null, {timeout: 60000});
  return page;
}
