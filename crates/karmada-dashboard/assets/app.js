// Live views: the server-sent-events stream named by <main data-live> says "change" when a watched object
// changes; the view's fragment is fetched again and swapped in. "ended" means the session is over.
(function () {
  "use strict";
  var main = document.getElementById("main");
  if (!main || !main.dataset.live) { return; }
  var busy = false, again = false;
  function refresh() {
    if (busy) { again = true; return; }
    busy = true;
    var url = new URL(window.location.href);
    url.searchParams.set("fragment", "1");
    fetch(url.toString(), { credentials: "same-origin", cache: "no-store" })
      .then(function (response) {
        if (response.redirected || response.status === 401) {
          window.location.href = "/login?ended=1";
          return null;
        }
        return response.text();
      })
      .then(function (html) {
        if (html !== null) {
          main.innerHTML = html;
          main.dataset.refreshed = String(Date.now());
        }
      })
      .catch(function () { again = true; })
      .finally(function () {
        busy = false;
        if (again) { again = false; window.setTimeout(refresh, 250); }
      });
  }
  var source = new EventSource(main.dataset.live);
  source.addEventListener("change", refresh);
  source.addEventListener("ended", function () {
    source.close();
    window.location.href = "/login?ended=1";
  });
})();
