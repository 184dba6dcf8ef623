// The console page in a real browser: Debian's chromium, headless, driven by
// playwright-core. Opens the console, calls VM.create from the form, waits for the reply
// and for the event over the page's WebSocket, saves a screenshot; then from a page of
// another origin (FOREIGN_URL: another server's /health, a page without CSP) tries a
// WebSocket and a form-encoded POST to BASE_URL. (A data: page would not do: chromium's
// local network access rules stop its requests to 127.0.0.1 before they leave.)
// Usage: node console_browser.mjs BASE_URL CHROMIUM SCREENSHOT FOREIGN_URL
// Prints one JSON line.
import { chromium } from "playwright-core";

const [base, executablePath, screenshot, foreign] = process.argv.slice(2);
const browser = await chromium.launch({
  executablePath,
  headless: true,
  args: ["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"],
});
const out = {};
try {
  const page = await browser.newPage();
  const errors = [];
  page.on("pageerror", (e) => errors.push(String(e)));
  page.on("console", (m) => m.type() === "error" && errors.push(m.text()));
  await page.goto(base + "/", { timeout: 15000 });
  out.title = await page.title();
  await page.locator(".verb b", { hasText: /^VM\.create$/ }).waitFor({ timeout: 15000 });
  out.verbs = await page.locator(".verb").count();
  await page.waitForFunction(() => document.getElementById("wsstate").textContent === "(live)", null, {
    timeout: 15000,
  });
  await page.locator(".verb", { has: page.locator("b", { hasText: /^VM\.create$/ }) }).click();
  out.help = await page.locator("#help").textContent();
  await page.fill("#params", JSON.stringify({ vmID: "browser-vm", name: "from chromium", memSize: 128 }));
  await page.click("#send");
  await page.waitForFunction(() => document.getElementById("reply").textContent.includes('"vmId": "browser-vm"'), null, {
    timeout: 15000,
  });
  out.reply = JSON.parse(await page.locator("#reply").textContent());
  await page.waitForFunction(
    () => [...document.querySelectorAll("#events pre")].some((p) => p.textContent.includes("|virt|VM_status|browser-vm")),
    null,
    { timeout: 15000 },
  );
  out.event = await page.locator("#events pre").first().textContent();
  await page.screenshot({ path: screenshot, fullPage: true });
  out.errors = errors;

  // A page of another origin, which the server does not allow.
  const evil = await browser.newPage();
  await evil.goto(foreign + "/health");
  Object.assign(
    out,
    await evil.evaluate(async (base) => {
      const ws = await new Promise((resolve) => {
        const w = new WebSocket(base.replace(/^http/, "ws") + "/");
        w.onopen = () => resolve("open");
        w.onerror = () => resolve("refused");
      });
      let post;
      try {
        // A form-encoded POST needs no preflight: the browser sends it.
        await fetch(base + "/", {
          method: "POST",
          mode: "no-cors",
          headers: { "content-type": "application/x-www-form-urlencoded" },
          body: JSON.stringify({ jsonrpc: "2.0", method: "VM.create", params: { vmID: "csrf-vm", name: "n" }, id: 1 }),
        });
        post = "sent";
      } catch (e) {
        post = "failed: " + e;
      }
      return { foreign_ws: ws, foreign_post: post };
    }, base),
  );
} finally {
  await browser.close();
}
console.log(JSON.stringify(out));
