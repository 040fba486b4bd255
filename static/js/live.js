// Live updates shared by the dashboard pages (docs/dashboard.md, "Live updates").
//
// Protocol: the server numbers every message of a topic (Redis INCR) and every data JSON carries
// the topic's number *read before the data*.  So a message whose seq is ≤ the data's seq is
// already reflected; a message with seq = last + 1 is the next one; a larger seq means messages
// were missed and the page resyncs over HTTP.  A dropped socket reconnects by itself with
// exponential backoff and resyncs on every (re)connection, since it may have missed anything.
window.Live = (function () {
  "use strict";

  class SessionExpired extends Error {}

  async function getJSON(url) {
    const response = await fetch(url, { credentials: "same-origin", headers: { Accept: "application/json" } });
    // role_required sends anonymous requests to the login page: the session has expired.
    if (response.redirected && new URL(response.url).pathname.startsWith("/accounts/login")) {
      throw new SessionExpired("your session has expired: reload the page to log in again");
    }
    if (!response.ok) {
      let message = response.status + " " + response.statusText;
      try {
        message = (await response.json()).error || message;
      } catch (e) {
        /* not JSON */
      }
      throw new Error(message);
    }
    return response.json();
  }

  // Coalesces refetch requests: soon() waits `delay` ms for more requests (at most `maxWait` ms
  // after the first), now() fetches at once; only one load runs at a time and a request made
  // during a load causes exactly one more load after it.  A burst of N run completions thus
  // costs one or two fetches, not N.
  function refresher(load, options) {
    const delay = (options && options.delay) || 100;
    const maxWait = (options && options.maxWait) || 400;
    let timer = null;
    let firstAsked = 0;
    let inflight = null;
    let again = false;
    const stats = { loads: 0, requests: 0, busy: false };

    function run() {
      clearTimeout(timer);
      timer = null;
      firstAsked = 0;
      if (inflight) {
        again = true;
        return inflight;
      }
      stats.loads += 1;
      stats.busy = true;
      inflight = Promise.resolve()
        .then(load)
        .catch(function (error) {
          showError(error);
        })
        .finally(function () {
          inflight = null;
          stats.busy = again || timer !== null;
          if (again) {
            again = false;
            run();
          }
        });
      return inflight;
    }

    function soon() {
      stats.requests += 1;
      stats.busy = true;
      const now = performance.now();
      if (!firstAsked) firstAsked = now;
      clearTimeout(timer);
      timer = setTimeout(run, Math.max(0, Math.min(delay, firstAsked + maxWait - now)));
    }

    function now() {
      stats.requests += 1;
      return run();
    }

    return { soon: soon, now: now, stats: stats };
  }

  function showError(error) {
    const box = document.getElementById("live-error") || createErrorBox();
    box.textContent = String(error && error.message ? error.message : error);
    box.hidden = false;
    console.error(error);
  }

  function clearError() {
    const box = document.getElementById("live-error");
    if (box) box.hidden = true;
  }

  function createErrorBox() {
    const box = document.createElement("p");
    box.id = "live-error";
    box.className = "warn";
    const main = document.querySelector("main");
    main.insertBefore(box, main.firstChild);
    return box;
  }

  // handlers: onMessage(message) for the next message in sequence; resync(reason) when the page
  // must refetch everything (a gap, a (re)connection).
  function connect(topic, handlers) {
    const statusEl = document.getElementById("live-status");
    const conn = {
      topic: topic,
      lastSeq: null,
      socket: null,
      attempts: 0,
      connects: 0,
      gaps: 0,
      closedByPage: false,
      // Record the seq a data JSON carried: messages up to it are already reflected.
      seen: function (seq) {
        if (typeof seq === "number") conn.lastSeq = conn.lastSeq === null ? seq : Math.max(conn.lastSeq, seq);
      },
      close: function () {
        conn.closedByPage = true;
        if (conn.socket) conn.socket.close();
      },
    };

    function setStatus(state, text) {
      if (!statusEl) return;
      statusEl.dataset.state = state;
      statusEl.textContent = text;
    }

    function open() {
      const scheme = location.protocol === "https:" ? "wss://" : "ws://";
      const socket = new WebSocket(scheme + location.host + "/ws/progress/" + encodeURIComponent(topic) + "/");
      conn.socket = socket;
      setStatus("connecting", conn.connects ? "reconnecting…" : "connecting…");
      socket.onopen = function () {
        conn.attempts = 0;
        conn.connects += 1;
        setStatus("live", "live");
        clearError();
        handlers.resync(conn.connects > 1 ? "reconnect" : "connect");
      };
      socket.onmessage = function (event) {
        let message;
        try {
          message = JSON.parse(event.data);
        } catch (e) {
          return;
        }
        const seq = message.seq;
        if (conn.lastSeq !== null && seq <= conn.lastSeq) return; // already in the data we hold
        const gap = conn.lastSeq !== null && seq > conn.lastSeq + 1;
        conn.lastSeq = seq;
        if (gap) {
          conn.gaps += 1;
          handlers.resync("gap");
        } else {
          handlers.onMessage(message);
        }
      };
      socket.onclose = function (event) {
        if (conn.socket !== socket) return;
        conn.socket = null;
        if (conn.closedByPage) return;
        if (event.code === 4401 || event.code === 4403) {
          setStatus("offline", "not live");
          showError("live updates refused: your session has expired or your account has no role; reload the page");
          return;
        }
        conn.attempts += 1;
        // 0.5 s, 1 s, 2 s … capped at 10 s, with jitter so a restarted server is not stampeded.
        const wait = Math.min(10000, 500 * Math.pow(2, conn.attempts - 1)) * (0.75 + Math.random() * 0.5);
        setStatus("reconnecting", "reconnecting…");
        setTimeout(open, wait);
      };
    }

    window.addEventListener("pagehide", conn.close);
    open();
    return conn;
  }

  // A page's usual wiring: load now, reload (debounced) on every message, resync at once on a
  // gap or (re)connection.  `load` returns the data JSON; its seq is recorded.
  function follow(topic, load, onMessage) {
    let conn = null;
    const r = refresher(async function () {
      const data = await load();
      // Stale data (served while the server recomputes) does not reflect its seq: ask again soon.
      if (data && data.stale) r.soon();
      else if (conn && data && typeof data.seq === "number") conn.seen(data.seq);
      return data;
    });
    conn = connect(topic, {
      onMessage: function (message) {
        if (onMessage) onMessage(message);
        r.soon();
      },
      resync: function () {
        r.now();
      },
    });
    r.now();
    const live = { conn: conn, refresher: r };
    window.__live = live; // for the browser tests and for debugging from the console
    return live;
  }

  // follow() for a page that shows several campaigns (the UnderSpecBench results, consent
  // sensitivity): one socket per topic, one shared refresher.  `load` returns data whose `seqs`
  // maps each topic to its number read before the data.  No topics (every campaign finished):
  // the data is loaded once and the page says it is not live.
  function followMany(topics, load, onMessage) {
    const conns = {};
    const r = refresher(async function () {
      const data = await load();
      if (data && data.stale) r.soon();
      else if (data && data.seqs) {
        Object.keys(conns).forEach(function (topic) {
          if (typeof data.seqs[topic] === "number") conns[topic].seen(data.seqs[topic]);
        });
      }
      return data;
    });
    (topics || []).forEach(function (topic) {
      conns[topic] = connect(topic, {
        onMessage: function (message) {
          if (onMessage) onMessage(message);
          r.soon();
        },
        resync: function () {
          r.now();
        },
      });
    });
    if (!topics || !topics.length) {
      const statusEl = document.getElementById("live-status");
      if (statusEl) {
        statusEl.dataset.state = "offline";
        statusEl.textContent = "finished (not live)";
      }
    }
    r.now();
    const live = { conns: conns, refresher: r };
    window.__live = live; // for the browser tests and for debugging from the console
    return live;
  }

  function csrfToken() {
    const match = document.cookie.match(/(?:^|;\s*)csrftoken=([^;]+)/);
    return match ? decodeURIComponent(match[1]) : "";
  }

  function pct(x, digits) {
    return x === null || x === undefined ? "–" : (100 * x).toFixed(digits === undefined ? 1 : digits) + "%";
  }

  return {
    getJSON: getJSON,
    refresher: refresher,
    connect: connect,
    follow: follow,
    followMany: followMany,
    showError: showError,
    csrfToken: csrfToken,
    pct: pct,
    SessionExpired: SessionExpired,
  };
})();
