// The theme binds each sidebar toggle to the first button of its kind in the page (document.querySelector),
// which sits in the top bar that book.css hides (#pst-header). The article header's own buttons (the menu at
// the left, the outline at the right) forward their clicks to that bound button, so that they open and close
// the sidebars; a button the theme itself listens to is left alone, so no click toggles twice.
document.addEventListener("DOMContentLoaded", () => {
  for (const kind of ["primary-toggle", "secondary-toggle"]) {
    const bound = document.querySelector(`.${kind}`);
    if (!bound) continue;
    document.querySelectorAll(`.bd-header-article .${kind}`).forEach((button) => {
      if (button === bound) return;
      button.addEventListener("click", (event) => {
        event.preventDefault();
        event.stopImmediatePropagation();
        bound.click();
      }, {capture: true});
    });
  }
});

// A figure is drawn at the width of the text; on a narrow screen its labels become small. Each output image
// links to its own file, so that a click opens it at full size.
document.addEventListener("DOMContentLoaded", () => {
  document.querySelectorAll(".cell_output img").forEach((image) => {
    if (image.closest("a")) return;
    const link = document.createElement("a");
    link.href = image.getAttribute("src");
    link.title = "open the figure at full size";
    image.replaceWith(link);
    link.appendChild(image);
  });
});
