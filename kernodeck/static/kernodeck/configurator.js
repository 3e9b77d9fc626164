// The configurator's live summary (htmx) names the fields it refuses: mark them in the form
// as the full page does on the server (.has-error, aria-invalid, the message by the field),
// and clear the marks once the summary shows a price again.
(function () {
  "use strict";

  function tokens(value) {
    return (value || "").split(/\s+/).filter(Boolean);
  }

  function describe(input, id, on) {
    var ids = tokens(input.getAttribute("aria-describedby")).filter(function (t) { return t !== id; });
    if (on) ids.push(id);
    if (ids.length) input.setAttribute("aria-describedby", ids.join(" "));
    else input.removeAttribute("aria-describedby");
  }

  function mark() {
    var form = document.getElementById("configure-form");
    var summary = document.getElementById("summary");
    if (!form || !summary) return;
    var messages = {};
    summary.querySelectorAll(".errorlist[data-field]").forEach(function (line) {
      var texts = [];
      line.querySelectorAll(".field-error").forEach(function (span) { texts.push(span.textContent); });
      messages[line.getAttribute("data-field")] = texts.join(" ");
    });
    form.querySelectorAll(".field[data-field]").forEach(function (box) {
      var name = box.getAttribute("data-field");
      var bad = Object.prototype.hasOwnProperty.call(messages, name);
      var inputs = box.querySelectorAll("input, select, textarea");
      var base = inputs.length ? (inputs[0].name ? "id_" + inputs[0].name : inputs[0].id) : name;
      var errorId = base + "_error";
      var list = box.querySelector("#" + errorId);
      box.classList.toggle("has-error", bad);
      if (bad) {
        if (!list) {
          list = document.createElement("ul");
          list.className = "errorlist";
          list.id = errorId;
          var anchor = box.querySelector(".helptext") || box.querySelector("legend, label");
          if (anchor) anchor.insertAdjacentElement("afterend", list);
          else box.prepend(list);
        }
        list.textContent = "";
        var item = document.createElement("li");
        item.textContent = messages[name];
        list.appendChild(item);
      } else if (list) {
        list.remove();
      }
      inputs.forEach(function (input) {
        if (bad) input.setAttribute("aria-invalid", "true");
        else input.removeAttribute("aria-invalid");
        describe(input, errorId, bad);
      });
    });
    // The page-top list of errors came with the page: once fixed, it no longer applies.
    var top = form.querySelector(".error-summary");
    if (top && !Object.keys(messages).length) top.hidden = true;
  }

  document.addEventListener("htmx:afterSettle", function (event) {
    if (event.target && event.target.id === "summary") mark();
  });
})();
