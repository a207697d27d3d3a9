// Loads a trace.json into Chromium DevTools' Performance panel, through the panel's own file
// input, and checks what DevTools made of it against the file itself:
//   - every thread (track) of the file shows as many slices as the file has X events on it;
//   - DevTools bound every dependency flow (s/f pair) to its two slices;
//   - no console error or uncaught exception while the trace loads.
// Writes a screenshot. Usage: node check_trace.mjs TRACE.json SCREENSHOT.png [CHROMIUM]
// Exit 0 when every check holds, 1 otherwise (each failure printed).
import {readFileSync} from 'node:fs';
import puppeteer from 'puppeteer-core';

const [tracePath, shotPath, chromium = '/usr/bin/chromium'] = process.argv.slice(2);
if (!tracePath || !shotPath) {
  console.error('usage: node check_trace.mjs TRACE.json SCREENSHOT.png [CHROMIUM]');
  process.exit(2);
}

// What the file holds: X events per "pid/tid", thread names, flow starts.
const file = JSON.parse(readFileSync(tracePath, 'utf8'));
const expected = new Map();
const threadNames = new Map();
let flowStarts = 0;
for (const e of file.traceEvents) {
  const key = `${e.pid}/${e.tid}`;
  if (e.ph === 'X') expected.set(key, (expected.get(key) || 0) + 1);
  if (e.ph === 's') flowStarts += 1;
  if (e.ph === 'M' && e.name === 'thread_name') threadNames.set(key, e.args.name);
}

const browser = await puppeteer.launch({
  executablePath: chromium,
  headless: true,
  pipe: false,  // DevTools' frontend is served over the remote-debugging HTTP port
  args: ['--no-sandbox', '--remote-allow-origins=*', '--enable-unsafe-swiftshader'],
});
const failures = [];
try {
  const port = new URL(browser.wsEndpoint()).port;
  const inspected = await browser.newPage();
  const page = await browser.newPage();
  await page.setViewport({width: 1600, height: 1000});
  // The DevTools frontend served by the browser itself, attached to a blank page.
  const frontend = `http://127.0.0.1:${port}/devtools/inspector.html?ws=127.0.0.1:${port}` +
      `/devtools/page/${inspected.target()._targetId}`;
  // Without the screencast of the (blank) inspected page, the panel gets the whole window: the
  // setting is read at start-up, so set it and load the frontend again.
  await page.goto(frontend, {waitUntil: 'load'});
  await page.evaluate(() => {
    for (const key of ['screencast-enabled', 'screencastEnabled']) localStorage.setItem(key, 'false');
  });
  await page.goto(frontend, {waitUntil: 'load'});
  // Once DevTools has started (its views can be shown), open the Performance panel.
  await page.waitForFunction(async () => {
    try {
      const UI = await import('./ui/legacy/legacy.js');
      await UI.ViewManager.ViewManager.instance().showView('timeline');
      return true;
    } catch (e) {
      window.__npusimLastError = String(e);
      return false;
    }
  }, {timeout: 15000, polling: 250}).catch(async e => {
    throw new Error(`the Performance panel did not open: ${
        await page.evaluate(() => window.__npusimLastError)} (${e.message})`);
  });
  const input = await page.waitForSelector('pierce/input[type="file"]', {timeout: 15000});

  // From here on, any console error or uncaught exception is the trace's.
  const errors = [];
  page.on('console', m => { if (m.type() === 'error') errors.push(m.text()); });
  page.on('pageerror', e => errors.push(String(e)));
  await input.uploadFile(tracePath);
  // What DevTools parsed, once it has: per thread its slices, and the flows it bound.
  const readParsed = () => page.evaluate(async () => {
    const Timeline = await import('./panels/timeline/timeline.js');
    const trace = Timeline.TimelinePanel.TimelinePanel.instance().getParsedTraceForLayoutTests();
    const data = trace && (trace.data || trace);
    if (!data || !data.Renderer) return null;
    const threads = {};
    for (const [pid, proc] of data.Renderer.processes) {
      for (const [tid, thread] of proc.threads) threads[`${pid}/${tid}`] = thread.entries.length;
    }
    return {threads, flows: data.Flows.flows.length};
  }).catch(e => ({error: String(e)}));
  let parsed = null;
  for (let tries = 0; tries < 240 && (parsed === null || parsed.error); ++tries) {
    await new Promise(resolve => setTimeout(resolve, 250));
    parsed = await readParsed();
  }
  if (parsed === null || parsed.error) {
    throw new Error(`DevTools did not load the trace: ${parsed ? parsed.error : 'no parsed trace'}`);
  }

  for (const [key, count] of expected) {
    const shown = parsed.threads[key] ?? 0;
    const name = threadNames.get(key) || key;
    console.log(`track ${key} ${name}: ${count} slices in the file, ${shown} in DevTools`);
    if (shown !== count) failures.push(`track ${name}: ${shown} slices shown, ${count} written`);
  }
  console.log(`flows: ${flowStarts} in the file, ${parsed.flows} bound to slices by DevTools`);
  if (flowStarts === 0) failures.push('the trace has no flows to check');
  if (parsed.flows !== flowStarts) {
    failures.push(`DevTools drew ${parsed.flows} of ${flowStarts} flows`);
  }
  // Expand both processes (their headers are the first rows of the flame chart) for the picture.
  await page.evaluate(async () => {
    const Timeline = await import('./panels/timeline/timeline.js');
    const panel = Timeline.TimelinePanel.TimelinePanel.instance();
    const chart = panel.getFlameChart?.()?.getMainFlameChart?.();
    const groups = chart?.timelineData?.()?.groups || [];
    groups.forEach((g, i) => { if (!g.expanded) chart.toggleGroupExpand?.(i); });
  }).catch(() => {});
  await page.screenshot({path: shotPath});
  console.log(`screenshot: ${shotPath}`);
  for (const e of errors) failures.push(`console error: ${e}`);
} catch (e) {
  failures.push(String(e));
} finally {
  await browser.close();
}
for (const f of failures) console.error(`FAIL: ${f}`);
console.log(failures.length === 0 ? 'browser check: OK' : `browser check: ${failures.length} failure(s)`);
process.exit(failures.length === 0 ? 0 : 1);
