// nettrail report page. Everything the trace says is shown with textContent
// (or drawn on the canvas), never parsed as HTML.
'use strict';
(function () {
  const DATA = JSON.parse(document.getElementById('data').textContent);
  const ROW_H = 22;
  const OVERSCAN = 8;

  /** An element with a class, text and children (strings become text nodes). */
  function el(tag, cls, ...children) {
    const e = document.createElement(tag);
    if (cls) e.className = cls;
    for (const c of children) {
      if (c === null || c === undefined) continue;
      e.append(typeof c === 'string' ? document.createTextNode(c) : c);
    }
    return e;
  }

  /** A cell as text: lists joined, null empty. */
  function text(v) {
    if (v === null || v === undefined) return '';
    if (Array.isArray(v)) return v.join('; ');
    return String(v);
  }

  /** A cell of a column as text: numbers with the column's decimals. */
  function cellText(column, v) {
    if (typeof v === 'number' && column.decimals !== undefined) return v.toFixed(column.decimals);
    return text(v);
  }

  function colIndex(table, name) {
    return table.columns.findIndex((c) => c.name === name);
  }

  // ---- Virtualised table: only the rows in view are in the document. ----
  class VTable {
    constructor(root, table, onSelect) {
      this.table = table;
      this.rows = table.rows;
      this.onSelect = onSelect;
      this.view = Array.from(this.rows.keys());
      this.sortCol = -1;
      this.desc = false;
      this.filter = '';
      this.hay = null;
      this.selected = -1;
      this.widths = table.columns.map((c, i) => this.width(c, i));
      this.total = this.widths.reduce((a, b) => a + b, 0);
      this.numeric = table.columns.map((c, i) => this.rows.some((r) => typeof r[i] === 'number'));

      this.root = el('div', 'vt');
      const input = el('input');
      input.type = 'search';
      input.placeholder = 'Filter: text in any column';
      input.setAttribute('aria-label', 'Filter rows');
      this.input = input;
      this.count = el('span', 'vt-count muted');
      this.root.append(el('div', 'vt-toolbar', input, this.count));
      this.scroll = el('div', 'vt-scroll');
      this.header = el('div', 'vt-header');
      this.header.style.width = this.total + 'px';
      this.ths = table.columns.map((c, i) => {
        const th = el('div', 'vt-th' + (c.main ? ' main' : ''), c.name);
        th.style.width = this.widths[i] + 'px';
        th.title = 'Sort by ' + c.name;
        th.dataset.col = String(i);
        th.addEventListener('click', () => this.sortBy(i));
        this.header.append(th);
        return th;
      });
      this.body = el('div', 'vt-body');
      this.body.style.width = this.total + 'px';
      this.scroll.append(this.header, this.body);
      this.root.append(this.scroll);
      root.append(this.root);

      this.pool = [];
      this.body.addEventListener('click', (ev) => {
        const row = ev.target.closest('.vt-row');
        if (row) this.select(Number(row.dataset.row));
      });
      let pending = false;
      this.scroll.addEventListener('scroll', () => {
        if (pending) return;
        pending = true;
        requestAnimationFrame(() => {
          pending = false;
          this.render();
        });
      });
      let timer = 0;
      input.addEventListener('input', () => {
        clearTimeout(timer);
        timer = setTimeout(() => this.setFilter(input.value), 120);
      });
      this.layout();
    }

    width(c, i) {
      let chars = c.name.length + 2;
      const n = Math.min(this.rows.length, 300);
      for (let r = 0; r < n; r++) chars = Math.max(chars, cellText(c, this.rows[r][i]).length);
      return Math.max(48, Math.min(c.name === 'url' ? 560 : 320, Math.ceil(chars * 7.6) + 18));
    }

    layout() {
      this.body.style.height = this.view.length * ROW_H + 'px';
      const shown = this.view.length === this.rows.length
        ? this.rows.length + ' rows'
        : this.view.length + ' of ' + this.rows.length + ' rows';
      this.count.textContent = shown;
      this.render();
    }

    /** Draws the rows in view (and a few around them), reusing row elements. */
    render() {
      const top = Math.max(0, this.scroll.scrollTop - this.header.offsetHeight);
      const height = this.scroll.clientHeight || 400;
      const first = Math.max(0, Math.floor(top / ROW_H) - OVERSCAN);
      const last = Math.min(this.view.length, Math.ceil((top + height) / ROW_H) + OVERSCAN);
      const need = Math.max(0, last - first);
      while (this.pool.length < need) {
        const row = el('div', 'vt-row');
        row.style.width = this.total + 'px';
        for (let i = 0; i < this.widths.length; i++) {
          const td = el('div', 'vt-td' + (this.numeric[i] ? ' num' : ''));
          td.style.width = this.widths[i] + 'px';
          row.append(td);
        }
        this.pool.push(row);
      }
      for (let k = 0; k < this.pool.length; k++) {
        const row = this.pool[k];
        if (k >= need) {
          if (row.parentNode) row.remove();
          continue;
        }
        const index = this.view[first + k];
        const cells = this.rows[index];
        row.style.top = (first + k) * ROW_H + 'px';
        row.dataset.row = String(index);
        row.classList.toggle('selected', index === this.selected);
        row.classList.toggle('odd', (first + k) % 2 === 1);
        const tds = row.children;
        for (let i = 0; i < tds.length; i++) {
          const t = cellText(this.table.columns[i], cells[i]);
          if (tds[i].textContent !== t) {
            tds[i].textContent = t;
            tds[i].title = t.length > 30 ? t : '';
          }
        }
        if (!row.parentNode) this.body.append(row);
      }
    }

    sortBy(i) {
      if (this.sortCol === i) this.desc = !this.desc;
      else {
        this.sortCol = i;
        this.desc = false;
      }
      this.ths.forEach((th, k) => {
        if (k === i) th.setAttribute('aria-sort', this.desc ? 'descending' : 'ascending');
        else th.removeAttribute('aria-sort');
      });
      this.apply();
    }

    setFilter(value) {
      this.filter = value.trim().toLowerCase();
      this.apply();
    }

    /** The rows the filter keeps, in the chosen order. */
    apply() {
      let view = Array.from(this.rows.keys());
      if (this.filter) {
        if (!this.hay) {
          const cols = this.table.columns;
          this.hay = this.rows.map((r) => r.map((v, i) => cellText(cols[i], v)).join('\u0001').toLowerCase());
        }
        const f = this.filter;
        view = view.filter((i) => this.hay[i].includes(f));
      }
      if (this.sortCol >= 0) {
        const c = this.sortCol;
        const sign = this.desc ? -1 : 1;
        const num = this.numeric[c];
        const key = (v) => (v === null || v === undefined || (Array.isArray(v) && v.length === 0))
          ? null
          : (num && typeof v === 'number' ? v : text(v).toLowerCase());
        const keys = new Map();
        for (const i of view) keys.set(i, key(this.rows[i][c]));
        view.sort((a, b) => {
          const x = keys.get(a);
          const y = keys.get(b);
          if (x === null || y === null) return x === y ? 0 : (x === null ? 1 : -1); // nulls last
          if (typeof x === 'number' && typeof y === 'number') return sign * (x - y);
          const xs = String(x);
          const ys = String(y);
          return sign * (xs < ys ? -1 : xs > ys ? 1 : 0);
        });
      }
      this.view = view;
      this.layout();
    }

    select(index) {
      this.selected = index;
      this.render();
      if (this.onSelect) this.onSelect(index);
    }

    /** Scrolls a row into view (selecting it). */
    reveal(index) {
      let at = this.view.indexOf(index);
      if (at < 0) {
        this.input.value = '';
        this.filter = '';
        this.apply();
        at = this.view.indexOf(index);
      }
      this.scroll.scrollTop = Math.max(0, at * ROW_H - this.scroll.clientHeight / 2);
      this.select(index);
    }
  }

  // ---- Details of a row. ----
  function fields(table, row) {
    const dl = el('dl', 'fields');
    table.columns.forEach((c, i) => {
      const v = row[i];
      dl.append(el('dt', null, c.name), el('dd', null, cellText(c, v)));
    });
    return dl;
  }

  function stackBlock(title, frames, note) {
    const box = el('div', 'stack-block');
    box.append(el('h3', null, title));
    if (note) box.append(el('p', 'note', note));
    if (!frames || frames.length === 0) box.append(el('p', 'empty', '(no frames)'));
    else {
      const pre = el('pre', 'stack');
      pre.textContent = frames.join('\n');
      box.append(pre);
    }
    return box;
  }

  function requestDetails(panel, table, index) {
    const row = table.rows[index];
    panel.replaceChildren();
    const get = (name) => row[colIndex(table, name)];
    const what = [get('layer'), get('method'), get('url') || [get('server') || get('ip'), get('port')].filter((x) => x !== null && x !== undefined).join(':')];
    panel.append(el('h2', null, 'Request ' + text(get('request')) + ': ' + what.filter(Boolean).join(' ')));

    const s = DATA.request_stacks[index];
    const stacks = el('section', 'stacks');
    stacks.append(el('h3', null, 'Stacks'));
    if (!s) {
      stacks.append(el('p', 'empty', DATA.facts.stacks && DATA.facts.stacks.events > 0
        ? 'No stack: the trace has none for this request\'s events.'
        : 'No stack: the trace was recorded without stacks.'));
    } else {
      const threads = s.threads.map((t) => (t === null ? '?' : String(t)));
      stacks.append(stackBlock('First: where the work began (thread ' + threads[0] + ')', DATA.stacks[s.first]));
      stacks.append(stackBlock('Last: the request\'s own stack (thread ' + threads[threads.length - 1] + ')', DATA.stacks[s.last]));
      stacks.append(stackBlock('Full: the chain of ' + s.chain + ' stack' + (s.chain === 1 ? '' : 's') + ', oldest first', DATA.stacks[s.full]));
    }
    panel.append(stacks);

    const events = el('section', 'events');
    events.append(el('h3', null, 'Events'));
    const activity = get('activity');
    const a = activity ? DATA.activities[activity] : null;
    if (!a) {
      events.append(el('p', 'empty', activity ? 'No events of activity ' + activity + '.' : 'The request has no activity id: its events cannot be listed.'));
    } else {
      const shown = a.events.length;
      events.append(el('p', 'note', 'Activity ' + activity + ': ' + (a.total > shown
        ? 'the first ' + shown + ' of its ' + a.total + ' events'
        : a.total + ' event' + (a.total === 1 ? '' : 's')) + ' in time order, those with this activity id or' +
        ' naming it as related, as nettrail dump --activity lists them (a report keeps at most ' +
        DATA.event_limit + ' per activity).'));
      const t = el('table', 'events');
      const head = el('tr');
      for (const h of ['time (s)', 'provider', 'event', 'pid', 'tid', 'details']) head.append(el('th', null, h));
      t.append(el('thead', null, head));
      const body = el('tbody');
      for (const e of a.events) {
        const tr = el('tr');
        tr.append(el('td', null, e.t.toFixed(6)), el('td', null, text(e.provider)), el('td', null, text(e.event) + ' (' + e.id + ')'),
          el('td', null, text(e.pid)), el('td', null, text(e.tid)), el('td', 'text', text(e.text)));
        body.append(tr);
      }
      t.append(body);
      events.append(t);
    }
    panel.append(events);
    panel.append(el('h3', null, 'Fields'), fields(table, row));
  }

  function rowDetails(panel, table, index, title) {
    panel.replaceChildren(el('h2', null, title), fields(table, table.rows[index]));
  }

  // ---- Timeline: a lane per process and thread, a bar per request. ----
  const LAYER_COLORS = {
    WinINet: '#d9480f', WinHTTP: '#2f6fde', URLMon: '#ae3ec9', LDAP: '#0c8599',
    Winsock: '#5c940d', TCP: '#495057', UDP: '#e8590c', Chromium: '#f59f00',
  };
  // A request's phases, in the order they follow one another (TLS is within connect).
  const PHASES = [
    ['blocked_s', 'blocked', '#ced4da'], ['dns_s', 'DNS', '#15aabf'], ['connect_s', 'connect + TLS', '#f59f00'],
    ['send_s', 'send', '#37b24d'], ['wait_s', 'wait', '#adb5bd'], ['receive_s', 'receive', null],
  ];
  const LANE_H = 16;
  const LABEL_W = 190;
  const AXIS_H = 18;

  class Timeline {
    constructor(table, onPick) {
      this.onPick = onPick;
      this.box = document.getElementById('timeline');
      this.canvas = document.getElementById('timeline-canvas');
      this.spacer = document.getElementById('timeline-spacer');
      this.info = document.getElementById('timeline-info');
      const c = (n) => colIndex(table, n);
      const [cs, cd, cp, cpid, cth, cl] = ['start_s', 'duration_s', 'process', 'pid', 'threads', 'layer'].map(c);
      const n = table.rows.length;
      const laneOf = new Map();
      const laneKeys = [];
      this.start = new Float64Array(n);
      this.end = new Float64Array(n);
      this.lane = new Int32Array(n);
      this.layer = [];
      // Per request, its phases' durations (null where the trace does not bound one), or null.
      const phaseCols = PHASES.map(([name]) => c(name));
      this.phases = [];
      const keys = [];
      table.rows.forEach((r, i) => {
        const th = Array.isArray(r[cth]) && r[cth].length ? r[cth][0] : null;
        const key = (r[cpid] === null ? '?' : r[cpid]) + '/' + (th === null ? '?' : th);
        if (!laneOf.has(key)) {
          laneOf.set(key, laneKeys.length);
          laneKeys.push({ key, process: r[cp] || '', pid: r[cpid], thread: th });
        }
        keys.push(laneOf.get(key));
        this.start[i] = r[cs] || 0;
        this.end[i] = this.start[i] + (typeof r[cd] === 'number' ? r[cd] : 0);
        this.layer.push(r[cl]);
        const p = phaseCols.map((k) => (k >= 0 && typeof r[k] === 'number' ? r[k] : null));
        this.phases.push(p.some((v, k) => v !== null && k > 0) ? p : null);
      });
      // Lanes ordered by process name, pid, thread.
      const order = laneKeys.map((_, i) => i).sort((a, b) => {
        const x = laneKeys[a];
        const y = laneKeys[b];
        return x.process.toLowerCase() < y.process.toLowerCase() ? -1 : x.process.toLowerCase() > y.process.toLowerCase() ? 1
          : ((x.pid || 0) - (y.pid || 0)) || ((x.thread || 0) - (y.thread || 0));
      });
      const rank = new Int32Array(order.length);
      order.forEach((l, k) => { rank[l] = k; });
      this.lanes = order.map((l) => laneKeys[l]);
      keys.forEach((l, i) => { this.lane[i] = rank[l]; });
      let lo = Infinity;
      let hi = -Infinity;
      for (let i = 0; i < n; i++) {
        lo = Math.min(lo, this.start[i]);
        hi = Math.max(hi, this.end[i]);
      }
      if (!isFinite(lo)) { lo = 0; hi = 1; }
      if (hi - lo < 1e-6) hi = lo + 1e-3;
      const pad = (hi - lo) * 0.02;
      this.full = [lo - pad, hi + pad];
      [this.t0, this.t1] = this.full;
      this.spacer.style.height = Math.max(1, this.lanes.length * LANE_H + AXIS_H) + 'px';
      this.box.style.height = Math.max(60, Math.min(190, this.lanes.length * LANE_H + AXIS_H + 6)) + 'px';
      // Where each lane is, for tests and tools: `pid/thread`, top to bottom.
      this.canvas.dataset.lanes = JSON.stringify(this.lanes.map((l) => l.pid + '/' + l.thread));
      this.bind();
      this.legend();
      this.draw();
      new ResizeObserver(() => this.draw()).observe(this.box);
    }

    legend() {
      const legend = document.getElementById('legend');
      const used = new Set(this.layer);
      for (const [name, color] of Object.entries(LAYER_COLORS)) {
        if (!used.has(name)) continue;
        const sw = el('i');
        sw.style.background = color;
        legend.append(el('span', null, sw, name));
      }
      if (this.phases.some((p) => p !== null)) {
        for (const [, name, color] of PHASES) {
          const sw = el('i');
          sw.style.background = color || '#495057';
          legend.append(el('span', 'phase', sw, name + (color ? '' : ' (layer colour)')));
        }
      }
    }

    bind() {
      const cv = this.canvas;
      cv.addEventListener('wheel', (ev) => {
        ev.preventDefault();
        const x = this.timeAt(ev.offsetX);
        const f = Math.exp(ev.deltaY * 0.0015);
        const span = Math.max(1e-7, (this.t1 - this.t0) * f);
        const k = (x - this.t0) / (this.t1 - this.t0);
        this.t0 = x - k * span;
        this.t1 = this.t0 + span;
        this.draw();
      }, { passive: false });
      let drag = null;
      cv.addEventListener('pointerdown', (ev) => {
        drag = { x: ev.clientX, t0: this.t0, t1: this.t1, moved: false };
        cv.setPointerCapture(ev.pointerId);
        cv.classList.add('dragging');
      });
      cv.addEventListener('pointermove', (ev) => {
        if (!drag) return;
        const dx = ev.clientX - drag.x;
        if (Math.abs(dx) > 2) drag.moved = true;
        const dt = dx / this.plotWidth() * (drag.t1 - drag.t0);
        this.t0 = drag.t0 - dt;
        this.t1 = drag.t1 - dt;
        this.draw();
      });
      cv.addEventListener('pointerup', (ev) => {
        cv.classList.remove('dragging');
        if (drag && !drag.moved) this.pick(ev.offsetX, ev.offsetY);
        drag = null;
      });
      this.box.addEventListener('scroll', () => this.draw());
      document.getElementById('timeline-reset').addEventListener('click', () => {
        [this.t0, this.t1] = this.full;
        this.draw();
      });
    }

    plotWidth() { return Math.max(10, this.canvas.clientWidth - LABEL_W); }

    timeAt(x) { return this.t0 + (x - LABEL_W) / this.plotWidth() * (this.t1 - this.t0); }

    xOf(t) { return LABEL_W + (t - this.t0) / (this.t1 - this.t0) * this.plotWidth(); }

    /** The request under a click, in its lane: the bar covering the time, else the nearest within 4 px. */
    pick(x, y) {
      const laneIdx = Math.floor((y + this.box.scrollTop - AXIS_H) / LANE_H);
      if (x < LABEL_W || laneIdx < 0 || laneIdx >= this.lanes.length) return;
      const t = this.timeAt(x);
      const slack = 4 / this.plotWidth() * (this.t1 - this.t0);
      let best = -1;
      let bestD = Infinity;
      for (let i = 0; i < this.lane.length; i++) {
        if (this.lane[i] !== laneIdx) continue;
        const d = t < this.start[i] ? this.start[i] - t : t > this.end[i] ? t - this.end[i] : 0;
        if (d <= slack && d < bestD) { best = i; bestD = d; }
      }
      if (best >= 0) this.onPick(best);
    }

    draw() {
      const cv = this.canvas;
      const dpr = window.devicePixelRatio || 1;
      const w = cv.clientWidth;
      const h = cv.clientHeight;
      if (!w || !h) return;
      if (cv.width !== Math.round(w * dpr) || cv.height !== Math.round(h * dpr)) {
        cv.width = Math.round(w * dpr);
        cv.height = Math.round(h * dpr);
      }
      const g = cv.getContext('2d');
      g.setTransform(dpr, 0, 0, dpr, 0, 0);
      g.clearRect(0, 0, w, h);
      g.font = '11px system-ui, sans-serif';
      g.textBaseline = 'middle';
      const scroll = this.box.scrollTop;
      const firstLane = Math.max(0, Math.floor(scroll / LANE_H) - 1);
      const lastLane = Math.min(this.lanes.length, Math.ceil((scroll + h) / LANE_H) + 1);
      const laneY = (l) => AXIS_H + l * LANE_H - scroll;
      // Lane labels and separators.
      for (let l = firstLane; l < lastLane; l++) {
        const y = laneY(l);
        const lane = this.lanes[l];
        g.fillStyle = l % 2 ? '#f7f9fc' : '#ffffff';
        g.fillRect(0, y, w, LANE_H);
        g.fillStyle = '#344054';
        const label = (lane.process || 'pid ' + (lane.pid === null ? '?' : lane.pid)) +
          (lane.process && lane.pid !== null ? ' (' + lane.pid + ')' : '') + ' · ' + (lane.thread === null ? '?' : lane.thread);
        g.save();
        g.beginPath();
        g.rect(0, y, LABEL_W - 6, LANE_H);
        g.clip();
        g.fillText(label, 4, y + LANE_H / 2);
        g.restore();
      }
      // Bars, or per-pixel coverage when there are more bars than pixels.
      const pw = this.plotWidth();
      const span = this.t1 - this.t0;
      let visible = 0;
      for (let i = 0; i < this.lane.length; i++) {
        const l = this.lane[i];
        if (l < firstLane || l >= lastLane || this.end[i] < this.t0 || this.start[i] > this.t1) continue;
        visible++;
      }
      const aggregated = visible > pw;
      let phased = 0;
      g.save();
      g.beginPath();
      g.rect(LABEL_W, AXIS_H, pw, h - AXIS_H);
      g.clip();
      if (aggregated) {
        const cols = Math.ceil(pw);
        const lanes = lastLane - firstLane;
        const diff = new Float32Array(lanes * (cols + 1));
        for (let i = 0; i < this.lane.length; i++) {
          const l = this.lane[i] - firstLane;
          if (l < 0 || l >= lanes || this.end[i] < this.t0 || this.start[i] > this.t1) continue;
          const a = Math.max(0, Math.floor((this.start[i] - this.t0) / span * pw));
          const b = Math.min(cols - 1, Math.floor((this.end[i] - this.t0) / span * pw));
          diff[l * (cols + 1) + a] += 1;
          diff[l * (cols + 1) + b + 1] -= 1;
        }
        let max = 1;
        const cover = new Float32Array(lanes * cols);
        for (let l = 0; l < lanes; l++) {
          let run = 0;
          for (let x = 0; x < cols; x++) {
            run += diff[l * (cols + 1) + x];
            cover[l * cols + x] = run;
            if (run > max) max = run;
          }
        }
        for (let l = 0; l < lanes; l++) {
          const y = laneY(l + firstLane) + 2;
          for (let x = 0; x < cols; x++) {
            const n = cover[l * cols + x];
            if (n <= 0) continue;
            g.fillStyle = 'rgba(47,111,222,' + (0.3 + 0.7 * Math.log1p(n) / Math.log1p(max)).toFixed(3) + ')';
            g.fillRect(LABEL_W + x, y, 1, LANE_H - 4);
          }
        }
      } else {
        for (let i = 0; i < this.lane.length; i++) {
          const l = this.lane[i];
          if (l < firstLane || l >= lastLane || this.end[i] < this.t0 || this.start[i] > this.t1) continue;
          const x0 = this.xOf(this.start[i]);
          const x1 = this.xOf(this.end[i]);
          const layerColor = LAYER_COLORS[this.layer[i]] || '#868e96';
          const p = this.phases[i];
          if (p && x1 - x0 >= 8) {
            // One bar split into its phases, each after the one before.
            let t = this.start[i];
            p.forEach((d, k) => {
              if (d === null || d <= 0) return;
              const a = this.xOf(t);
              t += d;
              g.fillStyle = PHASES[k][2] || layerColor;
              g.fillRect(a, laneY(l) + 2, Math.max(1, this.xOf(t) - a), LANE_H - 4);
            });
            // The rest of a connection's life (no phase of a request): the layer's colour.
            if (t < this.end[i]) {
              g.fillStyle = layerColor;
              g.fillRect(this.xOf(t), laneY(l) + 2, Math.max(1, x1 - this.xOf(t)), LANE_H - 4);
            }
            phased++;
          } else {
            g.fillStyle = layerColor;
            g.fillRect(x0, laneY(l) + 2, Math.max(2, x1 - x0), LANE_H - 4);
          }
        }
      }
      g.restore();
      // Time axis.
      g.fillStyle = '#fff';
      g.fillRect(0, 0, w, AXIS_H);
      g.strokeStyle = '#d9dee7';
      g.beginPath();
      g.moveTo(0, AXIS_H - 0.5);
      g.lineTo(w, AXIS_H - 0.5);
      g.moveTo(LABEL_W - 0.5, 0);
      g.lineTo(LABEL_W - 0.5, h);
      g.stroke();
      const step = niceStep(span / Math.max(2, pw / 90));
      const digits = Math.max(0, Math.min(7, -Math.floor(Math.log10(step))));
      g.fillStyle = '#667085';
      for (let t = Math.ceil(this.t0 / step) * step; t <= this.t1; t += step) {
        const x = this.xOf(t);
        g.fillRect(x, AXIS_H - 4, 1, 4);
        g.fillText(t.toFixed(digits) + ' s', x + 2, AXIS_H / 2);
      }
      g.fillText('process · thread', 4, AXIS_H / 2);
      this.info.textContent = this.lane.length + ' requests in ' + this.lanes.length + ' lanes; ' +
        (aggregated ? visible + ' bars in ' + Math.round(pw) + ' px: coverage per pixel column' : visible + ' bars in view');
      this.canvas.dataset.mode = aggregated ? 'aggregated' : 'bars';
      this.canvas.dataset.visible = String(visible);
      this.canvas.dataset.phased = String(phased);
      this.canvas.dataset.t0 = String(this.t0);
      this.canvas.dataset.t1 = String(this.t1);
    }
  }

  function niceStep(raw) {
    const p = Math.pow(10, Math.floor(Math.log10(raw)));
    const m = raw / p;
    return (m <= 1 ? 1 : m <= 2 ? 2 : m <= 5 ? 5 : 10) * p;
  }

  // ---- Header and facts. ----
  function header() {
    const f = DATA.facts;
    const name = String(f.file || '').split(/[\\/]/).pop();
    document.getElementById('title').textContent = name;
    const dl = document.getElementById('summary');
    const item = (k, v, warn) => {
      const d = el('div', warn ? 'warn' : null, el('dt', null, k), el('dd', null, text(v)));
      dl.append(d);
    };
    item('start', f.start_utc);
    item('end', f.end_utc);
    item('span', typeof f.span_seconds === 'number' ? f.span_seconds.toFixed(3) + ' s' : '-');
    item('events', f.events);
    item('lost events', f.events_lost, f.events_lost > 0);
    item('lost buffers', f.buffers_lost, f.buffers_lost > 0);
    item('requests', f.requests);
    item('connections', f.connections);
    item('DNS', f.dns_lookups);
    item('Http.sys', f.http_server_requests);
    item('browser', f.browser_rows);
    item('events with stacks', f.stacks ? f.stacks.events : 0);
    item('providers', (f.providers || []).length);
    if ((f.errors || []).length) item('damage', f.errors.join('; '), true);
  }

  function factsPanel(panel) {
    const f = DATA.facts;
    const t = el('table', 'facts');
    const body = el('tbody');
    for (const [k, v] of Object.entries(f)) {
      if (k === 'providers') continue;
      const shown = v !== null && typeof v === 'object' ? JSON.stringify(v) : text(v);
      body.append(el('tr', null, el('th', null, k), el('td', null, shown)));
    }
    t.append(body);
    panel.append(el('h3', null, 'Trace'), t);
    const p = el('table', 'facts providers');
    const head = el('tr');
    for (const h of ['events', 'decoded', 'guid', 'provider', 'record kinds']) head.append(el('th', null, h));
    p.append(el('thead', null, head));
    const pb = el('tbody');
    const providers = (f.providers || []).slice().sort((a, b) => b.events - a.events);
    for (const pr of providers) {
      pb.append(el('tr', null, el('td', null, text(pr.events)), el('td', null, text(pr.decoded)),
        el('td', null, text(pr.guid)), el('td', null, text(pr.name || '(unknown)')), el('td', null, text(pr.record_kinds))));
    }
    p.append(pb);
    panel.append(el('h3', null, 'Providers (' + providers.length + ')'), p);
  }

  // ---- Tabs. ----
  function main() {
    header();
    const tabs = document.getElementById('tabs');
    const panels = document.getElementById('panels');
    const tables = {};
    const buttons = [];
    const show = (id) => {
      for (const b of buttons) b.setAttribute('aria-selected', String(b.dataset.tab === id));
      for (const p of panels.children) p.hidden = p.id !== 'panel-' + id;
      if (tables[id]) tables[id].render();
    };
    const add = (id, label, build) => {
      const b = el('button', null, label);
      b.type = 'button';
      b.setAttribute('role', 'tab');
      b.dataset.tab = id;
      b.addEventListener('click', () => show(id));
      tabs.append(b);
      buttons.push(b);
      const panel = el('section', 'panel');
      panel.id = 'panel-' + id;
      panel.hidden = true;
      panels.append(panel);
      build(panel);
    };
    const tableTab = (id, label, data, details) => add(id, label + ' (' + data.rows.length + ')', (panel) => {
      const split = el('div', 'split');
      panel.append(split);
      const side = el('aside', 'details');
      side.append(el('p', 'empty', 'Click a row to see its details.'));
      tables[id] = new VTable(split, data, (i) => details(side, data, i));
      split.append(side);
    });
    tableTab('requests', 'Requests', DATA.tables.requests, requestDetails);
    tableTab('connections', 'Connections', DATA.tables.connections, (p, t, i) => rowDetails(p, t, i, 'Connection'));
    tableTab('dns', 'DNS', DATA.tables.dns, (p, t, i) => rowDetails(p, t, i, 'DNS lookup'));
    tableTab('http_server', 'Http.sys server', DATA.tables.http_server, (p, t, i) => rowDetails(p, t, i, 'Http.sys request'));
    tableTab('browser', 'Browser', DATA.tables.browser, (p, t, i) => rowDetails(p, t, i, 'Browser region or event'));
    add('facts', 'Facts', factsPanel);
    show('requests');
    new Timeline(DATA.tables.requests, (i) => {
      show('requests');
      tables.requests.reveal(i);
    });
    document.body.dataset.ready = 'true';
  }

  main();
})();
