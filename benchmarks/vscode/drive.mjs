// Drives a real VS Code (code-server in Chromium, through puppeteer-core) with the groundcode
// extension installed: opens a file, types at a member trigger, waits for the ghost text, takes a
// screenshot, accepts it with Tab, saves, and measures keystroke-to-ghost-text latency.
// Run by benchmarks/vscode_editor.py (one call per file and trust mode); prints one JSON line.
//
//   node drive.mjs --url URL --chromium PATH --file REL --line N --typed TEXT --members a,b
//                  [--screenshot PNG] [--trials 20] [--timeout-ms 60000]
//
// --line is 1-based; the cursor goes to the end of that line, which ends in a `.` (e.g. `self.`):
// the driver deletes it and types it again. A trial types `--typed` (e.g. `v = self.`) on a fresh
// line below it and times the last keystroke to the first ghost text the editor renders after
// it (performance.now() in the page, both ends observed there: a keydown listener and a
// MutationObserver).
import puppeteer from "puppeteer-core";

function args() {
  const a = process.argv.slice(2);
  const out = { trials: 20, timeoutMs: 60000 };
  for (let i = 0; i < a.length; i += 2) {
    const k = a[i].replace(/^--/, "").replace(/-(\w)/g, (_, c) => c.toUpperCase());
    out[k] = a[i + 1];
  }
  out.trials = Number(out.trials);
  out.timeoutMs = Number(out.timeoutMs);
  out.line = Number(out.line);
  out.members = (out.members || "").split(",").filter(Boolean);
  return out;
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const MOD = "Control";

async function chord(page, key) {
  await page.keyboard.down(MOD);
  await page.keyboard.press(key);
  await page.keyboard.up(MOD);
}

// the ghost text VS Code renders after the cursor (inline part and any lines below it)
async function ghost(page) {
  return page.evaluate(() => {
    const parts = [...document.querySelectorAll(".monaco-editor .ghost-text-decoration, .monaco-editor .ghost-text-decoration-preview, .monaco-editor .ghost-text")];
    return parts.map((e) => e.textContent).join("").replace(/\u00a0/g, " ");
  });
}

async function statusText(page) {
  return page.evaluate(() => {
    const items = [...document.querySelectorAll(".statusbar-item")];
    const it = items.find((e) => /groundcode/.test(e.getAttribute("aria-label") || e.textContent || ""));
    return it ? (it.getAttribute("aria-label") || it.textContent) : null;
  });
}

// the cursor as the status bar says it ("Ln 14, Col 18": 1-based) → [line, character]
async function cursor(page) {
  return page.evaluate(() => {
    for (const e of document.querySelectorAll(".statusbar-item")) {
      const m = /^Ln (\d+), Col (\d+)/.exec(e.getAttribute("aria-label") || e.textContent || "");
      if (m) return [Number(m[1]), Number(m[2]) - 1];
    }
    return null;
  });
}

async function waitFor(fn, timeoutMs, what) {
  const t0 = Date.now();
  for (;;) {
    const v = await fn();
    if (v) return v;
    if (Date.now() - t0 > timeoutMs) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await sleep(100);
  }
}

async function openFile(page, rel, line) {
  await chord(page, "p");
  await page.waitForSelector(".quick-input-widget input", { visible: true });
  await page.keyboard.type(rel);
  const name = rel.split("/").pop();
  await waitFor(() => page.evaluate((name) => [...document.querySelectorAll(".quick-input-list .monaco-list-row")]
    .some((e) => e.textContent.includes(name)), name), 20000, `${rel} in Quick Open`);
  await page.keyboard.press("Enter");
  await waitFor(() => page.evaluate((name) => [...document.querySelectorAll(".tab .label-name, .tab-label")]
    .some((e) => e.textContent.includes(name)), name), 20000, `the editor tab of ${rel}`);
  await sleep(500);
  await chord(page, "g");
  await page.waitForSelector(".quick-input-widget input", { visible: true });
  await page.keyboard.type(String(line));
  await page.keyboard.press("Enter");
  await sleep(300);
  await page.keyboard.press("End");
}

// arm the page's probes: the time of the next `key` keydown, the first ghost text after it
async function arm(page, key) {
  await page.evaluate((key) => {
    window.__gc = { key, down: null, shown: null, text: null };
    if (!window.__gcListening) {
      window.__gcListening = true;
      document.addEventListener("keydown", (e) => {
        if (window.__gc && e.key === window.__gc.key && window.__gc.down === null) window.__gc.down = performance.now();
      }, true);
      const read = () => [...document.querySelectorAll(".monaco-editor .ghost-text-decoration, .monaco-editor .ghost-text-decoration-preview, .monaco-editor .ghost-text")]
        .map((e) => e.textContent).join("").replace(/\u00a0/g, " ").trim();
      new MutationObserver(() => {
        const g = window.__gc;
        if (g && g.down !== null && g.shown === null) {
          const t = read();
          if (t) { g.shown = performance.now(); g.text = t; }
        }
      }).observe(document.body, { subtree: true, childList: true, characterData: true });
    }
  }, key);
}

async function main() {
  const o = args();
  const out = { file: o.file, ok: false, steps: [] };
  const browser = await puppeteer.launch({
    executablePath: o.chromium, headless: true,
    args: ["--no-sandbox", "--disable-gpu", "--window-size=1280,800", "--no-first-run"],
    defaultViewport: { width: 1280, height: 800 },
  });
  const step = (s) => { out.steps.push(s); process.stderr.write(`[drive] ${s}\n`); };
  try {
    const page = await browser.newPage();
    await page.goto(o.url, { waitUntil: "domcontentloaded", timeout: o.timeoutMs });
    await page.waitForSelector(".monaco-workbench", { timeout: o.timeoutMs });
    step("workbench loaded");
    await sleep(2000);
    await openFile(page, o.file, o.line);
    step(`opened ${o.file}:${o.line}`);
    out.status_ready = await waitFor(async () => {
      const s = await statusText(page);
      return s && /groundcode: ready/.test(s) ? s : null;
    }, o.timeoutMs, "the groundcode status item to say ready");
    step(`status: ${out.status_ready}`);
    // the first suggestion (cold: the model's first prompt, the analyzer's first question):
    // the cursor sits after the `.` the fixture wrote; delete it and type it again
    await page.keyboard.press("Backspace");
    await sleep(200);
    await arm(page, ".");
    await page.keyboard.type(".");
    const first = await waitFor(() => ghost(page), o.timeoutMs, "the first ghost text");
    out.ghost = first;
    out.first_latency_ms = await page.evaluate(() => window.__gc.shown === null ? null
      : Math.round((window.__gc.shown - window.__gc.down) * 10) / 10);
    out.status_after = await statusText(page);
    step(`ghost text: ${JSON.stringify(first)}; status: ${out.status_after}`);
    const member = o.members.find((m) => first.trimStart().startsWith(m));
    out.member = member || null;
    if (o.screenshot) {
      await page.screenshot({ path: o.screenshot });
      step(`screenshot ${o.screenshot}`);
    }
    // Tab accepts; beside an open suggest widget the first Tab takes the selected item and the
    // ghost text of the rest stays: a second Tab takes it (what a user does)
    out.tabs = 0;
    do {
      await page.keyboard.press("Tab");
      out.tabs += 1;
      await sleep(500);
    } while (out.tabs < 2 && (await ghost(page)).trim());
    await chord(page, "s");
    await sleep(1000);
    step("accepted with Tab and saved");
    // latency: fresh lines below, the prefix typed at once, the last keystroke timed
    out.latency_ms = [];
    out.trial_ghosts = [];
    out.trial_cursors = [];
    for (let i = 0; i < o.trials; i++) {
      await page.keyboard.press("End");
      await page.keyboard.press("Enter");
      await sleep(1500);                       // whatever the empty line gets, then dismissed
      await page.keyboard.press("Escape");
      await sleep(200);
      await arm(page, ".");
      await page.keyboard.type(o.typed);
      try {
        await waitFor(() => page.evaluate(() => window.__gc.shown !== null), 15000, "ghost text");
        const g = await page.evaluate(() => window.__gc);
        out.latency_ms.push(Math.round((g.shown - g.down) * 10) / 10);
        out.trial_ghosts.push(g.text);
        out.trial_cursors.push(await cursor(page));
      } catch (e) {
        out.latency_ms.push(null);
        out.trial_ghosts.push(null);
        out.trial_cursors.push(await cursor(page));
      }
      await page.keyboard.press("Escape");
    }
    step(`latency trials: ${JSON.stringify(out.latency_ms)}`);
    // leave the buffer as the first accepted suggestion left it (the trials are not saved)
    out.ok = Boolean(member);
  } catch (e) {
    out.error = String(e && e.stack || e);
    try {        // what the editor showed when it failed
      const page = (await browser.pages()).pop();
      out.statusbar = await page.evaluate(() => [...document.querySelectorAll(".statusbar-item")]
        .map((e) => e.getAttribute("aria-label") || e.textContent).filter(Boolean));
      out.notifications = await page.evaluate(() => [...document.querySelectorAll(".notification-list-item-message")]
        .map((e) => e.textContent));
      if (o.screenshot) await page.screenshot({ path: o.screenshot.replace(/\.png$/, ".error.png") });
    } catch (e2) { out.error += ` (and no state: ${e2})`; }
  } finally {
    await browser.close();
  }
  process.stdout.write(JSON.stringify(out) + "\n");
}

main();
