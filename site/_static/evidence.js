// The series' website: its own additions (site/conf.py loads this on every page).
//
// Search-term highlighting: the theme loads Sphinx's searchtools.js on every page (for its search dialog), and
// sphinx_highlight.js skips highlighting wherever searchtools.js is loaded, so a search result opened without
// its terms marked. On every page but the search page itself, highlight the terms the last search stored.
document.addEventListener("DOMContentLoaded", () => {
  if (document.getElementById("search-results")) return;
  if (typeof SphinxHighlight !== "undefined" && typeof Search !== "undefined") {
    SphinxHighlight.highlightSearchWords();
  }
});
