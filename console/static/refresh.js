// The console's one script: lists reload themselves every data-refresh
// seconds (the server sets it on <body> of the pages that list), so that
// balances, contracts and the trail stay current on a screen left open.
// Not while paused (the header's button; remembered for the tab), not
// while the tab is hidden, and not once a field of the page has been
// touched or has focus: a reload would lose what was being typed.
(function () {
  "use strict";
  var secs = Number(document.body.dataset.refresh);
  var button = document.getElementById("refresh-toggle");
  if (!secs || !button) {
    return;
  }
  var key = "bourse-refresh-paused";
  function paused() {
    return sessionStorage.getItem(key) === "1";
  }
  function show() {
    button.textContent = paused() ? "Resume refresh" : "Pause refresh";
    button.setAttribute("aria-pressed", String(paused()));
  }
  // What the fields held when the page was drawn: a field that holds
  // something else now has been touched. (A select without a selected
  // option shows its first, which is no choice of the user's.)
  var fields = document.querySelectorAll("input, select, textarea");
  function state() {
    var out = [];
    for (var i = 0; i < fields.length; i++) {
      out.push(fields[i].tagName === "SELECT" ? fields[i].selectedIndex : fields[i].value);
    }
    return out.join("\u0000");
  }
  var drawn = state();
  function touched() {
    var a = document.activeElement;
    if (a && /^(INPUT|SELECT|TEXTAREA)$/.test(a.tagName)) {
      return true;
    }
    return state() !== drawn;
  }
  button.hidden = false;
  show();
  button.addEventListener("click", function () {
    if (paused()) {
      sessionStorage.removeItem(key);
    } else {
      sessionStorage.setItem(key, "1");
    }
    show();
  });
  setInterval(function () {
    if (!paused() && !document.hidden && !touched()) {
      location.reload();
    }
  }, secs * 1000);
})();
