// The console of a server with --auth in a real browser: Debian's chromium, headless,
// driven by playwright-core (tests/web/auth.rs writes the credentials file: alice,
// password "wonderland", may call VM.* but not VM.destroy; anonymous may call nothing).
// Opens the console, signs in with a wrong password (an error, no verbs), then with the
// right one (alice's verbs), calls VM.create from the form and waits for its event over
// the page's WebSocket, then calls VM.destroy by hand (refused); saves a screenshot.
// Usage: node console_auth_browser.mjs BASE_URL CHROMIUM SCREENSHOT
// Prints one JSON line.
import { chromium } from "playwright-core";

const [base, executablePath, screenshot] = process.argv.slice(2);
const browser = await chromium.launch({
  executablePath,
  headless: true,
  args: ["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"],
});
const out = {};
const T = { timeout: 15000 };
const text = (id) => document.getElementById(id).textContent;
try {
  const page = await browser.newPage();
  const errors = [];
  page.on("pageerror", (e) => errors.push(String(e)));
  page.on("console", (m) => m.type() === "error" && errors.push(m.text()));
  await page.goto(base + "/", T);
  out.title = await page.title();
  await page.locator("#signin").waitFor({ state: "visible", ...T });
  await page.waitForFunction(() => document.getElementById("verbs").textContent.startsWith("sign in"), null, T);
  out.verbs_before = await page.locator(".verb").count();

  await page.fill("#user", "alice");
  await page.fill("#password", "nope");
  await page.click("#login");
  await page.waitForFunction(() => document.getElementById("signin-error").textContent.includes("failed"), null, T);
  out.wrong_error = await page.evaluate(text, "signin-error");
  out.verbs_after_wrong = await page.locator(".verb").count();

  await page.fill("#password", "wonderland");
  await page.click("#login");
  const create = page.locator(".verb", { has: page.locator("b", { hasText: /^VM\.create$/ }) });
  await create.waitFor(T);
  out.principal = await page.evaluate(text, "principal");
  out.has_create = await create.count();
  out.has_destroy = await page.locator(".verb b", { hasText: /^VM\.destroy$/ }).count();
  out.has_echo = await page.locator(".verb b", { hasText: /^echo$/ }).count();
  await page.waitForFunction(() => document.getElementById("wsstate").textContent === "(live)", null, T);

  await create.click();
  await page.fill("#params", JSON.stringify({ vmID: "auth-browser-vm", name: "signed in", memSize: 128 }));
  await page.click("#send");
  await page.waitForFunction(() => document.getElementById("reply").textContent.includes('"vmId": "auth-browser-vm"'), null, T);
  out.reply = JSON.parse(await page.evaluate(text, "reply"));
  await page.waitForFunction(
    () => [...document.querySelectorAll("#events pre")].some((p) => p.textContent.includes("|virt|VM_status|auth-browser-vm")),
    null,
    T,
  );
  out.event = await page.locator("#events pre").first().textContent();

  await page.fill("#method", "VM.destroy");
  await page.fill("#params", JSON.stringify(["auth-browser-vm"]));
  await page.click("#send");
  await page.waitForFunction(() => document.getElementById("reply").textContent.includes("VM.destroy"), null, T);
  out.destroy = JSON.parse(await page.evaluate(text, "reply"));

  await page.screenshot({ path: screenshot, fullPage: true });
  out.stored = await page.evaluate(
    () => (localStorage.length ? "localStorage " : "") + (sessionStorage.length ? "sessionStorage " : "") + document.cookie,
  );
  out.errors = errors;
} finally {
  await browser.close();
}
console.log(JSON.stringify(out));
