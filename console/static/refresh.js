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
  function touched() {
    var a = document.activeElement;
    if (a && /^(INPUT|SELECT|TEXTAREA)$/.test(a.tagName)) {
      return true;
    }
    var fields = document.querySelectorAll("input, select, textarea");
    for (var i = 0; i < fields.length; i++) {
      var f = fields[i];
      if (f.tagName === "SELECT") {
        for (var j = 0; j < f.options.length; j++) {
          if (f.options[j].selected !== f.options[j].defaultSelected) {
            return true;
          }
        }
      } else if (f.type !== "hidden" && f.value !== f.defaultValue) {
        return true;
      }
    }
    return false;
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
