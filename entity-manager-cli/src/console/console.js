// entity-manager console: the little the pages need beyond HTML.
// A select marked data-submit reloads its form when it changes (the query form's fields follow
// the entity and index chosen); a page marked data-refresh reloads itself while a scan runs.
document.addEventListener("DOMContentLoaded", function () {
  document.querySelectorAll("select[data-submit]").forEach(function (select) {
    select.addEventListener("change", function () {
      var run = select.form.querySelector("input[name=run]");
      if (run) { run.disabled = true; }
      select.form.submit();
    });
  });
  var refresh = document.querySelector("[data-refresh]");
  if (refresh) {
    setTimeout(function () { window.location.reload(); }, Number(refresh.dataset.refresh) || 1000);
  }
});
