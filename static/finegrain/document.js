// Document page: selecting a summary sentence or key-fact highlights its contextual mapping in the source.
(function () {
  "use strict";
  function select(item) {
    document.querySelectorAll(".summary-sentence.active").forEach(function (el) { el.classList.remove("active"); });
    document.querySelectorAll(".sentence.highlight").forEach(function (el) { el.classList.remove("highlight"); });
    item.classList.add("active");
    var ids = (item.dataset.highlights || "").split(" ").filter(Boolean);
    ids.forEach(function (id) {
      var el = document.getElementById(id);
      if (el) { el.classList.add("highlight"); }
    });
    var first = ids.length && document.getElementById(ids.slice().sort(function (a, b) {
      return parseInt(a.slice(1), 10) - parseInt(b.slice(1), 10);
    })[0]);
    if (first) { first.scrollIntoView({ block: "center", behavior: "smooth" }); }
  }
  document.addEventListener("click", function (event) {
    var item = event.target.closest(".summary-sentence");
    if (item) { select(item); }
  });
  document.addEventListener("keydown", function (event) {
    var item = event.target.closest && event.target.closest(".summary-sentence");
    if (item && (event.key === "Enter" || event.key === " ")) { event.preventDefault(); select(item); }
  });
})();
