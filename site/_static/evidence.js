// The series' website: its own additions (site/conf.py loads this on every page).
//
// Search-term highlighting: the theme loads Sphinx's searchtools.js on every page (for its search dialog), and
// sphinx_highlight.js skips highlighting wherever searchtools.js is loaded, so a search result opened without
// its terms marked. On every page but the search page itself, highlight the terms the last search stored.
//
// Search result snippets: Sphinx's searchtools.js fetches each result page and shows text around the query from
// the page's [role="main"] element, which in these themes also holds the article header's buttons ("Settings Light
// Dark ..."), so every snippet began with them. Its Search.htmlToText is the one place that picks the text: here it
// reads the article only (article.bd-article, without the page's navigation line, .site-nav), and falls back to
// Sphinx's own for a page without one; tables are left out where the rest holds the query. Set when the page has loaded: on the search page searchtools.js comes after
// this file, and its search starts after this listener (registered first) has run.
function snippetsFromTheArticle() {
  if (typeof Search === "undefined" || !Search.htmlToText) return;
  const sphinxHtmlToText = Search.htmlToText;
  Search.htmlToText = (htmlString, anchor) => {
    const doc = new DOMParser().parseFromString(htmlString, "text/html");
    const article = doc.querySelector("article.bd-article");
    if (!article) return sphinxHtmlToText(htmlString, anchor);
    article.querySelectorAll(".headerlink, script, style, .site-nav").forEach((el) => el.remove());
    const part = (anchor ? article.querySelector(anchor) : null) || article;
    // Table cells run together without spaces ("40 min02"): the snippet leaves tables out when the query's words
    // are in the rest of the text.
    const words = (new URLSearchParams(location.search).get("q") || "").toLowerCase().split(/\s+/).filter(Boolean);
    const prose = part.cloneNode(true);
    prose.querySelectorAll("table").forEach((el) => el.remove());
    const text = prose.textContent.toLowerCase();
    return words.length && words.some((w) => text.includes(w)) ? prose.textContent : part.textContent;
  };
}
document.addEventListener("DOMContentLoaded", () => {
  hangWrappedCodeLines();
  wrapOutputProse();
  keepShortCellsWhole();
  snippetsFromTheArticle();
  if (document.getElementById("search-results")) return;
  if (typeof SphinxHighlight !== "undefined" && typeof Search !== "undefined") {
    SphinxHighlight.highlightSearchWords();
  }
});

// Code that wraps gets a hanging indent (evidence.css, span.code-line): each line of a code block (not an output,
// whose lines never wrap) becomes an inline-block of the column's width that knows its indentation, and the line
// breaks between them stay text, so the code reads and copies exactly as before (tests/browser/test_site.py
// compares it with the notebooks). Pygments writes flat token spans; a token that holds a line break (a
// multi-line string) is cut into one copy per line.
function hangWrappedCodeLines() {
  const blocks = document.querySelectorAll(".bd-article div.highlight > pre");
  for (const pre of blocks) {
    if (pre.closest("div.cell_output")) continue;
    const lines = [[]];
    for (const node of Array.from(pre.childNodes)) {
      node.textContent.split("\n").forEach((part, i) => {
        if (i > 0) lines.push([]);
        if (!part) return;
        let piece;
        if (node.nodeType === Node.TEXT_NODE) piece = document.createTextNode(part);
        else { piece = node.cloneNode(false); piece.textContent = part; }
        lines[lines.length - 1].push(piece);
      });
    }
    if (lines.length > 1 && lines[lines.length - 1].length === 0) lines.pop();  // the block's final line break
    const children = [];
    lines.forEach((pieces, i) => {
      if (i > 0) children.push(document.createTextNode("\n"));
      if (!pieces.length) return;  // an empty line: the line break alone
      const line = document.createElement("span");
      line.className = "code-line";
      const text = pieces.map((p) => p.textContent).join("");
      line.style.setProperty("--indent", String(text.length - text.trimStart().length));
      line.append(...pieces);
      children.push(line);
    });
    pre.replaceChildren(...children);
  }
}

// Outputs that are not tables wrap (evidence.css, span.output-line): a one-line JSON output or a sentence under a
// table hid most of its text past the column's edge. A line belongs to a table when it has a run of two spaces
// between words (aligned columns) or is a rule (dashes, equals signs, box lines); every other line goes in a
// span.output-line that wraps. The line breaks between them stay text, so the output reads and copies as before.
const TABLE_LINE = /\S {2,}\S|^[\s\-=+|:\u2500-\u257F]+$/;
function wrapOutputProse() {
  for (const pre of document.querySelectorAll(".bd-article div.cell_output div.highlight > pre")) {
    const lines = pre.textContent.split("\n");
    if (!lines.some((line) => line && !TABLE_LINE.test(line))) continue;
    if (pre.querySelector("span:not(:empty)") && pre.children.length > 1) continue;  // coloured (ANSI) output: leave it
    const children = [];
    lines.forEach((line, i) => {
      if (i > 0) children.push(document.createTextNode("\n"));
      if (!line) return;
      if (TABLE_LINE.test(line)) { children.push(document.createTextNode(line)); return; }
      const span = document.createElement("span");
      span.className = "output-line";
      span.textContent = line;
      children.push(span);
    });
    pre.replaceChildren(...children);
  }
}

// Short table cells ("40 min" in the home page's tables, "none", a number) never break inside (evidence.css).
function keepShortCellsWhole() {
  for (const cell of document.querySelectorAll(".bd-article table td, .bd-article table th")) {
    if (cell.textContent.trim().length <= 12) cell.classList.add("short-cell");
  }
}
