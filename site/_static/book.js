// The theme binds each sidebar toggle to the first button of its kind in the page, which sits in the top bar
// that book.css hides (#pst-header). The article header's own buttons (the menu at the left, the outline at the
// right) forward their clicks to those, so that they open and close the sidebars.
document.addEventListener("DOMContentLoaded", () => {
  for (const kind of ["primary-toggle", "secondary-toggle"]) {
    const bound = document.querySelector(`#pst-header .${kind}`);
    if (!bound) continue;
    document.querySelectorAll(`.bd-header-article .${kind}`).forEach((button) => {
      button.addEventListener("click", (event) => {
        event.preventDefault();
        bound.click();
      });
    });
  }
});
