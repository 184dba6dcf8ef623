// Issue 40 with the console in headless chromium (playwright-core): the page's events
// socket, cut by the test (the server sits behind a proxy the test cuts for 3 s when
// this script prints "cut"), connects again by itself and resumes after the last event
// it showed: the events published while it was disconnected appear, each once.
// Events are published straight to the server (SERVER_URL, JSON-RPC over HTTP).
// Usage: node console_resume_browser.mjs PAGE_URL SERVER_URL CHROMIUM
// Prints "cut", then one JSON line: {names, ids, states}.
import { chromium } from "playwright-core";

const [base, server, executablePath] = process.argv.slice(2);
const fail = (why) => {
  console.error("FAIL", why);
  process.exit(1);
};

async function publish(n) {
  const r = await fetch(server + "/", {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ jsonrpc: "2.0", method: "Host.publishEvent", params: { name: "|t|" + n, params: { n } }, id: n }),
  });
  const body = await r.json();
  if (body.result === undefined) fail("publish: " + JSON.stringify(body));
}

const browser = await chromium.launch({
  executablePath,
  headless: true,
  args: ["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"],
});
const out = { states: [] };
try {
  const page = await browser.newPage();
  const state = () => page.evaluate(() => document.getElementById("wsstate").textContent);
  const shown = (count) =>
    page.waitForFunction(
      (count) => [...document.querySelectorAll("#events pre.event")].filter((p) => p.textContent.includes(" |t|")).length >= count,
      count,
      { timeout: 30000 },
    );
  await page.goto(base + "/", { timeout: 15000 });
  await page.waitForFunction(() => document.getElementById("wsstate").textContent === "(live)", null, {
    timeout: 15000,
  });
  for (let n = 1; n <= 5; n++) await publish(n);
  await shown(5);
  console.log("cut");
  await page.waitForFunction(() => document.getElementById("wsstate").textContent.startsWith("(disconnected"), null, {
    timeout: 15000,
  });
  out.states.push(await state());
  for (let n = 6; n <= 15; n++) await publish(n);
  await page.waitForFunction(() => document.getElementById("wsstate").textContent === "(live)", null, {
    timeout: 30000,
  });
  out.states.push(await state());
  await shown(15);
  for (let n = 16; n <= 20; n++) await publish(n);
  await shown(20);
  await page.waitForTimeout(300);
  // The pane shows the newest first.
  const events = await page.$$eval("#events pre.event", (ps) =>
    ps
      .map((p) => ({ name: p.textContent.split("\n")[0].split(" ").pop(), id: p.dataset.eventId }))
      .filter((e) => e.name.startsWith("|t|"))
      .reverse(),
  );
  out.names = events.map((e) => e.name);
  out.ids = events.map((e) => e.id);
} finally {
  await browser.close();
}
console.log(JSON.stringify(out));
