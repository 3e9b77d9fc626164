// The order file's rental block: copy buttons next to access details, and a countdown
// to the end of the period that keeps ticking without reloading the page.
(function () {
  "use strict";
  var labels = {
    es: { copy: "Copiar", copied: "Copiado", d: "d", h: "h", m: "min", over: "Terminado" },
    en: { copy: "Copy", copied: "Copied", d: "d", h: "h", m: "min", over: "Ended" },
  };
  var words = labels[(document.documentElement.lang || "en").slice(0, 2)] || labels.en;

  document.querySelectorAll("[data-copy]").forEach(function (node) {
    var button = document.createElement("button");
    button.type = "button";
    button.className = "small secondary copy";
    button.textContent = words.copy;
    button.addEventListener("click", function () {
      navigator.clipboard.writeText(node.textContent.trim()).then(function () {
        button.textContent = words.copied;
        setTimeout(function () { button.textContent = words.copy; }, 1500);
      });
    });
    node.insertAdjacentElement("afterend", button);
  });

  var countdown = document.getElementById("countdown");
  if (!countdown) return;
  var end = Date.now() + Number(countdown.dataset.secondsLeft) * 1000;
  function render() {
    var left = Math.max(0, Math.floor((end - Date.now()) / 1000));
    if (left === 0) { countdown.textContent = words.over; return; }
    var d = Math.floor(left / 86400), h = Math.floor((left % 86400) / 3600);
    var m = Math.floor((left % 3600) / 60);
    countdown.textContent = d + " " + words.d + " " + h + " " + words.h + " " + m + " " + words.m;
  }
  render();
  setInterval(render, 30000);
})();
