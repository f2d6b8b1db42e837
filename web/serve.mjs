// The page's static server (scripts/web.sh): web/ and the wasm build at /,
// a models folder at /models/ (with /models/index.json listing its model
// folders). Binds 127.0.0.1 only: navigator.gpu needs a secure context,
// which a loopback origin is.
//
//   node web/serve.mjs --port 8080 --models tests/fixtures --build build-wasm
import {createServer} from "node:http";
import {createReadStream, existsSync, readdirSync, statSync} from "node:fs";
import {dirname, extname, join, normalize, resolve, sep} from "node:path";
import {fileURLToPath} from "node:url";

const args = process.argv.slice(2);
const opt = (name, fallback) => (args.includes(name) ? args[args.indexOf(name) + 1] : fallback);
const here = dirname(fileURLToPath(import.meta.url));
const port = Number(opt("--port", "8080"));
const models = resolve(opt("--models", join(here, "..", "tests", "fixtures")));
const build = resolve(opt("--build", join(here, "..", "build-wasm")));

const types = {".html": "text/html", ".js": "text/javascript", ".mjs": "text/javascript", ".css": "text/css",
               ".json": "application/json", ".wasm": "application/wasm", ".png": "image/png"};

// The file under root that urlPath names, or null (no escaping root).
function under(root, urlPath) {
  const p = normalize(join(root, urlPath));
  return p === root || p.startsWith(root + sep) ? p : null;
}

function modelList() {
  if (!existsSync(models)) return [];
  return readdirSync(models).filter((d) => existsSync(join(models, d, "config.json"))).sort();
}

const server = createServer((req, res) => {
  const path = decodeURIComponent(new URL(req.url, "http://x").pathname);
  let file = null;
  if (path === "/models/index.json") {
    res.writeHead(200, {"content-type": "application/json", "cache-control": "no-store"});
    res.end(JSON.stringify({models: modelList()}));
    return;
  }
  if (path.startsWith("/models/")) file = under(models, path.slice("/models/".length));
  else if (path === "/forge_wasm.js" || path === "/forge_wasm.wasm") file = join(build, path.slice(1));
  else file = under(here, path === "/" ? "index.html" : path.slice(1));
  if (!file || !existsSync(file) || !statSync(file).isFile()) {
    res.writeHead(404, {"content-type": "text/plain"});
    res.end("not found\n");
    return;
  }
  res.writeHead(200, {"content-type": types[extname(file)] || "application/octet-stream",
                      "content-length": statSync(file).size, "cache-control": "no-cache"});
  createReadStream(file).pipe(res);
});
server.listen(port, "127.0.0.1", () => {
  console.log(`forge web: http://127.0.0.1:${server.address().port}/ (models from ${models})`);
});
