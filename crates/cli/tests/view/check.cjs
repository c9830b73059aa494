// Drives a `nettrail view` report in headless Chromium (playwright-core) and
// checks what a reader sees. Run by crates/cli/tests/view.rs:
//   node check.cjs MODE REPORT.html EXPECT.json
// MODE: sample | hostile | tables | load | browser. EXPECT holds what the Rust test
// knows from `nettrail requests` and the other table commands. Exits non-zero
// with a message on the first failed check; prints one JSON line of results.
'use strict';
const fs = require('fs');
const path = require('path');
const os = require('os');
const { chromium } = require('playwright-core');

const [mode, report, expectFile] = process.argv.slice(2);
const expect = JSON.parse(fs.readFileSync(expectFile, 'utf8'));
const pageUrl = 'file://' + path.resolve(report);

function check(ok, what) {
  if (!ok) throw new Error('check failed: ' + what);
}

async function rowsShown(page, panel) {
  return page.$$eval('#panel-' + panel + ' .vt-row', (rows) => rows.length);
}

async function countText(page, panel) {
  return page.textContent('#panel-' + panel + ' .vt-count');
}

/** The texts of one column of the rows in the DOM, in display order. */
async function columnTexts(page, panel, column) {
  return page.evaluate(([panel, column]) => {
    const ths = Array.from(document.querySelectorAll('#panel-' + panel + ' .vt-th'));
    const i = ths.findIndex((th) => th.textContent === column);
    const rows = Array.from(document.querySelectorAll('#panel-' + panel + ' .vt-row'));
    rows.sort((a, b) => parseFloat(a.style.top) - parseFloat(b.style.top));
    return rows.map((r) => r.children[i].textContent);
  }, [panel, column]);
}

async function sample(page, results) {
  check(await countText(page, 'requests') === expect.rows + ' rows', 'row count text: ' + await countText(page, 'requests'));
  check(await rowsShown(page, 'requests') === expect.rows, 'rows in the table');
  const urls = await columnTexts(page, 'requests', 'url');
  for (const u of expect.urls) check(urls.includes(u), 'the table has ' + u);
  const headers = await page.$$eval('#panel-requests .vt-th', (t) => t.map((x) => x.textContent));
  check(JSON.stringify(headers) === JSON.stringify(expect.columns), 'every column of nettrail requests: ' + headers);

  // The WINWORD.EXE request: its URL and its First stack's frames.
  await page.click('#panel-requests .vt-row:has-text("WINWORD.EXE")');
  const details = await page.textContent('#panel-requests .details');
  check(details.includes(expect.word_url), 'details show the URL');
  const firstStack = await page.textContent('#panel-requests .details .stack-block:first-of-type pre');
  for (const f of expect.word_first) check(firstStack.includes(f), 'First stack has ' + f + ' in ' + firstStack);
  check(details.includes('Last:') && details.includes('Full:'), 'Last and Full stacks shown');
  check(details.includes('Events'), 'events section');
  results.details_chars = details.length;

  // A request with an activity lists its events.
  await page.click('#panel-requests .vt-row:has-text("style.css")');
  const events = await page.$$eval('#panel-requests .details table.events tbody tr', (r) => r.length);
  check(events === expect.style_events, 'style.css request lists ' + expect.style_events + ' events, not ' + events);

  // Sort by duration, both ways.
  await page.click('#panel-requests .vt-th:text-is("duration_s")');
  let d = (await columnTexts(page, 'requests', 'duration_s')).filter((x) => x !== '').map(Number);
  check(d.every((v, i) => i === 0 || d[i - 1] <= v), 'ascending durations ' + d);
  await page.click('#panel-requests .vt-th:text-is("duration_s")');
  d = (await columnTexts(page, 'requests', 'duration_s')).filter((x) => x !== '').map(Number);
  check(d.every((v, i) => i === 0 || d[i - 1] >= v), 'descending durations ' + d);
  // Sort by status, both ways: the socket rows have none and stay last.
  for (const way of ['ascending', 'descending']) {
    await page.click('#panel-requests .vt-th:text-is("status")');
    const s = await columnTexts(page, 'requests', 'status');
    const empty = s.findIndex((x) => x === '');
    check(empty > 0 && s.slice(empty).every((x) => x === ''), 'no status sorts last, ' + way + ': ' + s);
  }
  await page.click('#panel-requests .vt-th:text-is("request")');

  // Filter on any column.
  await page.fill('#panel-requests .vt-toolbar input', 'winword');
  await page.waitForFunction(() => document.querySelectorAll('#panel-requests .vt-row').length === 1);
  check(await countText(page, 'requests') === '1 of ' + expect.rows + ' rows', 'filtered count');
  await page.fill('#panel-requests .vt-toolbar input', '93.184.216.34');
  await page.waitForFunction((n) => document.querySelectorAll('#panel-requests .vt-row').length === n, expect.example_rows);
  await page.fill('#panel-requests .vt-toolbar input', '');
  await page.waitForFunction((n) => document.querySelectorAll('#panel-requests .vt-row').length === n, expect.rows);

  // A click on the WINWORD.EXE bar of the timeline opens its request.
  await page.click('#panel-requests .vt-row:has-text("style.css")');
  const bar = await page.$eval('#timeline-canvas', (cv, [lane, start, end]) => {
    const lanes = JSON.parse(cv.dataset.lanes);
    const t0 = Number(cv.dataset.t0);
    const t1 = Number(cv.dataset.t1);
    const t = (start + end) / 2;
    return { x: 190 + (t - t0) / (t1 - t0) * (cv.clientWidth - 190), y: 18 + lanes.indexOf(lane) * 16 + 8, lane: lanes.indexOf(lane) };
  }, [expect.word_lane, expect.word_start, expect.word_end]);
  check(bar.lane >= 0, 'a lane for ' + expect.word_lane);
  await page.click('#timeline-canvas', { position: { x: bar.x, y: bar.y } });
  const heading = await page.textContent('#panel-requests .details h2');
  check(heading.startsWith('Request ' + expect.word_request + ':'), 'the bar opened its request: ' + heading);
  // Bars wide enough are split into their phases, named in the legend.
  const phased = Number(await page.getAttribute('#timeline-canvas', 'data-phased'));
  check(phased >= 1, 'bars drawn in phases: ' + phased);
  const legend = await page.textContent('#legend');
  for (const p of ['DNS', 'connect + TLS', 'send', 'wait', 'receive']) check(legend.includes(p), 'legend names ' + p);
  results.phased_bars = phased;

  await tabs(page, results);
  // The screenshot: the requests tab with the WINWORD.EXE request open.
  await page.click('#tabs button[data-tab="requests"]');
  await page.click('#panel-requests .vt-row:has-text("WINWORD.EXE")');
  await page.screenshot({ path: expect.screenshot, fullPage: true });
  results.screenshot = expect.screenshot;
}

/** Every table tab shows its rows; the facts tab its providers. */
async function tabs(page, results) {
  for (const [tab, n] of Object.entries(expect.tabs)) {
    await page.click('#tabs button[data-tab="' + tab + '"]');
    check(await page.isVisible('#panel-' + tab), tab + ' visible');
    check(await countText(page, tab) === n + ' rows', tab + ' has ' + n + ' rows: ' + await countText(page, tab));
    const inDom = await rowsShown(page, tab);
    check(n === 0 ? inDom === 0 : inDom > 0 && inDom <= n, tab + ' rows in the DOM: ' + inDom);
    if (n > 0) {
      await page.click('#panel-' + tab + ' .vt-row >> nth=0');
      check((await page.textContent('#panel-' + tab + ' .details')).includes('start_utc'), tab + ' details');
    }
    results[tab] = n;
  }
  await page.click('#tabs button[data-tab="facts"]');
  const facts = await page.textContent('#panel-facts');
  check(facts.includes('Providers (' + expect.providers + ')'), 'providers listed');
  check(facts.includes('events_lost'), 'lost events shown');
}

async function hostile(page, results) {
  check(await rowsShown(page, 'requests') === expect.rows, 'rows');
  const urls = await columnTexts(page, 'requests', 'url');
  check(urls.includes(expect.url), 'the URL shown as text: ' + urls);
  await page.click('#panel-requests .vt-row:has-text("pwned")');
  check((await page.textContent('#panel-requests .details')).includes(expect.url), 'details show the URL as text');
  await page.click('#tabs button[data-tab="facts"]');
  await page.click('#tabs button[data-tab="requests"]');
  await page.waitForTimeout(300);
  check(await page.evaluate(() => window.pwned === undefined), 'window.pwned is undefined');
  check(await page.evaluate(() => document.querySelectorAll('img, body script:not(#data)').length) === 1, 'no element from the trace (only the page script)');
  results.pwned = await page.evaluate(() => String(window.pwned));
}

async function tables(page, results) {
  await tabs(page, results);
}

/** A browser's trace: its requests with their URLs (layer Chromium), the
 * QUIC connection, the regions and NetLog sources of the browser tab. */
async function browserTrace(page, results) {
  await tabs(page, results);
  await page.click('#tabs button[data-tab="requests"]');
  const urls = await columnTexts(page, 'requests', 'url');
  for (const u of expect.urls) check(urls.includes(u), 'the request of ' + u + ' listed: ' + urls);
  const layers = await columnTexts(page, 'requests', 'layer');
  check(layers.filter((l) => l === 'Chromium').length === expect.chromium_rows, 'Chromium rows: ' + layers);
  await page.click('#tabs button[data-tab="connections"]');
  const protocols = await columnTexts(page, 'connections', 'protocol');
  check(protocols.includes('QUIC'), 'a QUIC connection: ' + protocols);
  await page.click('#panel-connections .vt-row:has-text("QUIC")');
  const details = await page.textContent('#panel-connections .details');
  check(details.includes(expect.connection_id), 'the QUIC connection id in its details');
  await page.click('#tabs button[data-tab="browser"]');
  const names = await columnTexts(page, 'browser', 'name');
  for (const n of expect.names) check(names.includes(n), n + ' in the browser tab: ' + names);
  results.browser_names = names.length;
}

async function load(page, results) {
  const t0 = Date.now();
  check(await countText(page, 'requests') === expect.rows + ' rows', 'row count ' + await countText(page, 'requests'));
  const shown = await rowsShown(page, 'requests');
  check(shown > 10 && shown < 200, 'only the rows in view are in the DOM: ' + shown);
  check(await page.getAttribute('#timeline-canvas', 'data-mode') === 'aggregated', 'the timeline aggregates');
  if (expect.screenshot) await page.screenshot({ path: expect.screenshot.replace(/\.png$/, '-aggregated.png') });
  await page.$eval('#panel-requests .vt-scroll', (s) => { s.scrollTop = s.scrollHeight; });
  await page.waitForFunction((n) => Array.from(document.querySelectorAll('#panel-requests .vt-row'))
    .some((r) => r.children[0].textContent === String(n)), expect.rows, { timeout: 5000 });
  results.scroll_end_ms = Date.now() - t0;
  await page.click('#panel-requests .vt-row:has-text("' + expect.rows + '")');
  check((await page.textContent('#panel-requests .details')).includes('Request ' + expect.rows), 'the last request opens');
  const t1 = Date.now();
  await page.click('#panel-requests .vt-th:text-is("duration_s")');
  await page.fill('#panel-requests .vt-toolbar input', expect.filter);
  await page.waitForFunction((n) => document.querySelector('#panel-requests .vt-count').textContent.startsWith(n + ' of'), expect.filter_rows, { timeout: 10000 });
  results.sort_filter_ms = Date.now() - t1;
  // Zoom the timeline in far enough that bars are drawn one by one.
  const box = await page.$('#timeline-canvas');
  const b = await box.boundingBox();
  const mid = { x: b.x + 200 + (b.width - 200) / 2, y: b.y + 40 };
  await page.mouse.move(mid.x, mid.y);
  for (let i = 0; i < 8; i++) await page.mouse.wheel(0, -600);
  await page.waitForFunction(() => document.getElementById('timeline-canvas').dataset.mode === 'bars', null, { timeout: 5000 });
  const zoomed = Number(await page.getAttribute('#timeline-canvas', 'data-visible'));
  check(zoomed > 0 && zoomed < expect.rows, 'zoomed in, bars one by one: ' + zoomed);
  // Drag to pan: other bars come into view.
  const before = Number(await page.getAttribute('#timeline-canvas', 'data-t0'));
  await page.mouse.down();
  await page.mouse.move(mid.x - 300, mid.y, { steps: 5 });
  await page.mouse.up();
  const after = Number(await page.getAttribute('#timeline-canvas', 'data-t0'));
  check(after > before, 'dragging left pans later: ' + before + ' → ' + after);
  results.zoomed_bars = zoomed;
  if (expect.screenshot) await page.screenshot({ path: expect.screenshot });
}

(async () => {
  const userData = fs.mkdtempSync(path.join(os.tmpdir(), 'nettrail-view-'));
  // An empty profile (Playwright passes it as --user-data-dir).
  const browser = await chromium.launchPersistentContext(userData, {
    executablePath: expect.chromium || '/usr/bin/chromium',
    headless: true,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--no-first-run', '--disable-background-networking',
      '--disable-component-update', '--disable-sync'],
    viewport: { width: 1440, height: 900 },
  });
  const results = { mode };
  try {
    const page = browser.pages()[0] || await browser.newPage();
    const requests = [];
    const errors = [];
    page.on('request', (r) => requests.push(r.url()));
    page.on('console', (m) => { if (m.type() === 'error') errors.push(m.text()); });
    page.on('pageerror', (e) => errors.push(String(e)));
    page.on('dialog', (d) => { errors.push('dialog: ' + d.message()); d.dismiss(); });
    const started = Date.now();
    await page.goto(pageUrl);
    await page.waitForSelector('body[data-ready="true"]', { timeout: 60000 });
    results.load_ms = Date.now() - started;
    await ({ sample, hostile, tables, load, browser: browserTrace })[mode](page, results);
    check(errors.length === 0, 'no console errors: ' + errors.join(' | '));
    const elsewhere = requests.filter((u) => u !== pageUrl);
    check(elsewhere.length === 0, 'no request but the page: ' + elsewhere.join(', '));
    results.page_loads = requests.length;
  } finally {
    await browser.close();
    fs.rmSync(userData, { recursive: true, force: true });
  }
  console.log(JSON.stringify(results));
})().catch((e) => {
  console.error(String(e && e.stack || e));
  process.exit(1);
});
