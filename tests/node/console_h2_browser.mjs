// The console opened over https:// in headless Chromium, which speaks HTTP/2 to any
// server that offers h2 by ALPN: the page, its script and its calls (fetch POSTs) must
// come over h2, as the browser's own resource timing says; the events WebSocket opens
// on the same connection by RFC 8441's extended CONNECT (the server counts it). The test's CA is not the browser's: certificate errors are
// ignored for this context only.
// Usage: node console_h2_browser.mjs BASE_URL CHROMIUM
// Prints one JSON line.
import { chromium } from "playwright-core";

const [base, executablePath] = process.argv.slice(2);
const browser = await chromium.launch({
  executablePath,
  headless: true,
  args: ["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"],
});
const out = {};
try {
  const context = await browser.newContext({ ignoreHTTPSErrors: true });
  const page = await context.newPage();
  const errors = [];
  page.on("pageerror", (e) => errors.push(String(e)));
  page.on("console", (m) => m.type() === "error" && errors.push(m.text()));
  await page.goto(base + "/", { timeout: 15000 });
  out.title = await page.title();
  await page.locator(".verb b", { hasText: /^VM\.create$/ }).waitFor({ timeout: 15000 });
  await page.waitForFunction(() => document.getElementById("wsstate").textContent === "(live)", null, {
    timeout: 15000,
  });
  await page.locator(".verb", { has: page.locator("b", { hasText: /^VM\.create$/ }) }).click();
  await page.fill("#params", JSON.stringify({ vmID: "h2-vm", name: "over h2", memSize: 64 }));
  await page.click("#send");
  await page.waitForFunction(() => document.getElementById("reply").textContent.includes('"vmId": "h2-vm"'), null, {
    timeout: 15000,
  });
  await page.waitForFunction(
    () => [...document.querySelectorAll("#events pre")].some((p) => p.textContent.includes("|virt|VM_status|h2-vm")),
    null,
    { timeout: 15000 },
  );
  Object.assign(
    out,
    await page.evaluate(() => ({
      navigation: performance.getEntriesByType("navigation")[0].nextHopProtocol,
      resources: performance
        .getEntriesByType("resource")
        .map((e) => ({ path: new URL(e.name).pathname, kind: e.initiatorType, protocol: e.nextHopProtocol })),
    })),
  );
  out.errors = errors;
} finally {
  await browser.close();
}
console.log(JSON.stringify(out));
