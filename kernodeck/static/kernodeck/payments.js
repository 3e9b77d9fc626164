// Payment page: copy buttons and the countdown to expiry (it stops once the status poll
// removes it, when the payment is decided). The page works without it.
(function () {
  document.addEventListener("click", function (event) {
    var button = event.target.closest("[data-copy]");
    if (!button || !navigator.clipboard) return;
    navigator.clipboard.writeText(button.getAttribute("data-copy")).then(function () {
      var label = button.textContent;
      button.textContent = "✓";
      setTimeout(function () { button.textContent = label; }, 1500);
    });
  });

  var countdown = document.getElementById("countdown");
  if (!countdown) return;
  var expires = Date.parse(countdown.getAttribute("data-expires"));
  function tick() {
    if (!countdown.isConnected) return; // decided: the status poll took the countdown away
    var left = Math.max(0, Math.floor((expires - Date.now()) / 1000));
    if (left === 0) {
      countdown.textContent = countdown.getAttribute("data-expired-text");
      return;
    }
    var minutes = Math.floor(left / 60), seconds = left % 60;
    countdown.textContent = minutes + ":" + (seconds < 10 ? "0" : "") + seconds;
    setTimeout(tick, 1000);
  }
  tick();
})();
