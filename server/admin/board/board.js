// Foyer's room board: draws the frames of board/events.
//
// Every text from the table is set with textContent and every plot with
// SVG attributes: a room's name is never read as markup (the page's
// Content-Security-Policy also makes markup from strings throw). The page
// keeps one element per room shown and a fixed number of plot elements,
// and no history of its own (the server sends the rate series whole), so
// it can stay open for days.
"use strict";

(() => {
  const svgNS = "http://www.w3.org/2000/svg";
  const $ = (id) => document.getElementById(id);

  // Optional fields of a room: each shows as a tag on its card when the
  // room carries it. A field the table gains is one more line here.
  const optionalTags = [
    ["code", (c) => "code " + c],
    ["private", () => "private"],
    ["password", () => "password"],
    ["node", (n) => "host " + n], // the cluster host running it (only in a cluster)
    ["cpu_seconds", (s) => (s < 60 ? s.toFixed(1) + "s" : duration(s)) + " CPU"],
    ["memory_bytes", (b) => (b / 1048576).toFixed(b < 10485760 ? 1 : 0) + " MiB"],
  ];

  // The sources of rooms Foyer spawned itself; the others registered.
  const ownSources = new Set(["instance", "exec"]);

  const cards = new Map(); // room id -> card

  // act sends an action to this listener: a POST from the board's own
  // page, which the listener tells from another site's by the headers
  // the browser adds (Sec-Fetch-Site, Origin), with the board's cookie
  // when there is a token. What it answers is shown in the notice.
  async function act(path) {
    const notice = $("notice");
    let said;
    try {
      const resp = await fetch(path, { method: "POST", credentials: "same-origin" });
      said = (await resp.text()).trim();
    } catch (e) {
      said = "the listener did not answer";
    }
    notice.hidden = false;
    text(notice, said);
  }

  $("drain").addEventListener("click", () => {
    const draining = $("drain").dataset.draining === "yes";
    if (draining || confirm("Drain this host? It starts no new room; the rooms that run play on.")) {
      act(draining ? "resume" : "drain");
    }
  });

  function el(tag, cls, parent) {
    const e = document.createElement(tag);
    if (cls) e.className = cls;
    if (parent) parent.appendChild(e);
    return e;
  }

  // text sets a node's text if it changed, so that an idle board does
  // not lay itself out again each second.
  function text(node, s) {
    if (node.textContent !== s) node.textContent = s;
  }

  function duration(seconds) {
    const s = Math.max(0, Math.floor(seconds));
    const pad = (n) => String(n).padStart(2, "0");
    if (s < 60) return s + "s";
    if (s < 3600) return Math.floor(s / 60) + "m " + pad(s % 60) + "s";
    if (s < 86400) return Math.floor(s / 3600) + "h " + pad(Math.floor(s / 60) % 60) + "m";
    return Math.floor(s / 86400) + "d " + Math.floor(s / 3600) % 24 + "h";
  }

  function newCard(id) {
    const root = el("article", "room");
    root.dataset.room = String(id);
    const head = el("div", "head", root);
    const count = el("span", "count num", head);
    const c = {
      root,
      state: head.insertBefore(el("span", "state"), count),
      taken: el("span", "taken", count),
      max: el("small", "max", count),
      name: el("h2", "name", root),
      fill: null,
      where: null,
      what: null,
      tags: null,
      tagKey: "",
    };
    c.fill = el("div", "fill", el("div", "bar", root));
    c.stop = el("button", "action", null);
    c.stop.type = "button";
    c.stop.textContent = "stop";
    c.stop.hidden = true;
    c.stop.addEventListener("click", () => {
      if (confirm("Stop room " + id + "? Its game is asked to stop, then it is killed.")) act("rooms/" + id + "/stop");
    });
    root.insertBefore(c.stop, root.firstChild);
    c.where = el("p", "where", root);
    c.what = el("p", "what", root);
    c.tags = el("ul", "tags", root);
    return c;
  }

  // draw shows room r (a row of /rooms, or an ended one) on card c; it
  // has a stop button when the listener can stop it.
  function draw(c, r, ended, actions) {
    const stoppable = actions && !ended && ownSources.has(r.source);
    if (c.stop.hidden === stoppable) c.stop.hidden = !stoppable;
    const state = ended ? "ended" : r.state;
    if (c.root.dataset.state !== state) c.root.dataset.state = state;
    text(c.state, ended ? "ended · " + r.cause : r.state);
    const taken = r.players + r.seats;
    const max = r.max_players;
    text(c.taken, String(taken));
    text(c.max, "/" + max);
    const width = max > 0 ? Math.min(100, Math.round((100 * taken) / max)) + "%" : "0%";
    if (c.fill.style.width !== width) c.fill.style.width = width;
    text(c.name, r.name || "Room " + r.id);
    text(c.where, "port " + r.port + " · " + (ended ? "lived " : "up ") + duration(r.age_seconds));
    const labels = Object.entries(r.tags || {}).map(([k, v]) => k + "=" + v);
    text(c.what, [ended && "ended " + duration(r.ended_seconds_ago) + " ago", r.game, r.mode, r.map, ...labels].filter(Boolean).join(" · "));

    const tags = [];
    if (ownSources.has(r.source)) tags.push(["own", "Foyer · " + r.source]);
    else if (r.source) tags.push(["", "registered" + (r.host ? " · " + r.host : "")]);
    for (const [field, label] of optionalTags) {
      if (r[field]) tags.push(["", label(r[field])]);
    }
    const key = JSON.stringify(tags);
    if (key !== c.tagKey) {
      c.tagKey = key;
      c.tags.replaceChildren(...tags.map(([cls, s]) => {
        const li = el("li", cls);
        li.textContent = s;
        return li;
      }));
    }
  }

  function drawRooms(f) {
    const list = $("rooms");
    const seen = new Set();
    let at = 0;
    const place = (id, r, ended) => {
      if (seen.has(id)) return;
      seen.add(id);
      let c = cards.get(id);
      if (!c) {
        c = newCard(id);
        cards.set(id, c);
      }
      draw(c, r, ended, f.actions);
      if (list.children[at] !== c.root) list.insertBefore(c.root, list.children[at] || null);
      at++;
    };
    for (const r of f.rooms) place(r.id, r, false);
    for (const r of f.ended) place(r.id, r, true);
    for (const [id, c] of cards) {
      if (!seen.has(id)) {
        c.root.remove();
        cards.delete(id);
      }
    }
    $("empty").hidden = cards.size > 0;
    const more = $("more");
    more.hidden = f.more === 0;
    text(more, f.more > 0 ? "and " + f.more + " more rooms (see /rooms)" : "");
  }

  function drawTotals(t) {
    text($("rooms-n"), String(t.rooms));
    text($("players-n"), t.players + "/" + t.max_players);
    text($("playing-n"), String(t.states.playing || 0));
    text($("warm-n"), String(t.warm));
  }

  function drawDrain(f) {
    const b = $("drain");
    b.hidden = !f.actions;
    const draining = f.totals.draining ? "yes" : "no";
    if (b.dataset.draining !== draining) b.dataset.draining = draining;
    text(b, f.totals.draining ? "draining · resume" : "drain");
  }

  // plot draws series (values per step, oldest first) right-aligned in a
  // plot of points steps.
  function plot(name, series, points, stepSeconds) {
    const svg = $(name + "-plot");
    const w = 300;
    const h = 60;
    const peak = series.length ? Math.max(...series) : 0;
    const top = Math.max(1, peak);
    const step = w / Math.max(1, points - 1);
    let line = "";
    series.forEach((v, i) => {
      const x = (w - (series.length - 1 - i) * step).toFixed(1);
      const y = (h - 2 - (v / top) * (h - 6)).toFixed(1);
      line += (i ? "L" : "M") + x + " " + y;
    });
    const area = series.length > 1
      ? line + "L" + w + " " + h + "L" + (w - (series.length - 1) * step).toFixed(1) + " " + h + "Z" : "";
    svg.querySelector(".line").setAttribute("d", line);
    svg.querySelector(".area").setAttribute("d", area);
    text($(name + "-now"), series.length ? String(series[series.length - 1]) : "–");
    text($(name + "-peak"), series.length ? "peak " + peak + " in " + duration(series.length * stepSeconds) : "");
  }

  function drawSpawn(s) {
    const svg = $("spawn-plot");
    if (!s) return;
    const n = s.counts.length;
    if (svg.childNodes.length !== 2 * n) { // first frame: make the bars
      svg.replaceChildren();
      for (let i = 0; i < n; i++) {
        svg.appendChild(document.createElementNS(svgNS, "rect"));
        const label = document.createElementNS(svgNS, "text");
        label.setAttribute("x", String((i + 0.5) * (300 / n)));
        label.setAttribute("y", "76");
        label.textContent = s.buckets[i];
        svg.appendChild(label);
      }
    }
    const top = Math.max(1, ...s.counts);
    const slot = 300 / n;
    s.counts.forEach((count, i) => {
      const bar = svg.childNodes[2 * i];
      const height = count ? Math.max(1, (count / top) * 62) : 0;
      bar.setAttribute("x", (i * slot + 2).toFixed(1));
      bar.setAttribute("width", (slot - 4).toFixed(1));
      bar.setAttribute("y", (64 - height).toFixed(1));
      bar.setAttribute("height", height.toFixed(1));
    });
    text($("spawn-p50"), s.count ? s.p50 : "–");
    text($("spawn-summary"), s.count ? "p95 " + s.p95 + " · mean " + Math.round(s.mean_ms) + "ms · " + s.count + " spawns" : "no spawns yet");
  }

  // The stream: a frame per change and at least one a second. The status
  // says the board is stale once frames stop; a stream the server refused
  // (no token, too many boards) is not retried by the browser, so the page
  // loads itself again a little later.
  let lastFrame = 0;
  const status = $("status");

  function onFrame(ev) {
    const f = JSON.parse(ev.data);
    lastFrame = Date.now();
    drawTotals(f.totals);
    drawDrain(f);
    drawRooms(f);
    plot("requests", f.rates.requests, f.rates.points, f.rates.step_seconds);
    plot("drops", f.rates.drops, f.rates.points, f.rates.step_seconds);
    drawSpawn(f.spawn);
    status.dataset.live = "yes";
    text(status, "live");
  }

  const stream = new EventSource("board/events");
  stream.onmessage = onFrame;
  let reload = 0;
  stream.onerror = () => {
    status.dataset.live = "no";
    text(status, "reconnecting…");
    if (stream.readyState === EventSource.CLOSED && !reload) {
      reload = setTimeout(() => location.reload(), 10000);
    }
  };
  setInterval(() => {
    if (lastFrame && Date.now() - lastFrame > 5000 && status.dataset.live === "yes") {
      status.dataset.live = "no";
      text(status, "stale since " + new Date(lastFrame).toLocaleTimeString());
    }
  }, 1000);
})();
