// The website's search ranking (site/conf.py's html_search_scorer: Sphinx writes it into language_data.js, which
// loads after searchtools.js and so replaces its default Scorer before any search runs). Sphinx's default weights,
// unchanged, plus one rule: a workshop solution (exercises/solutions/, facilitator material) ranks below the pages
// a learner reads for the same words, the series and the workshop's student copies. Sphinx scores a page by which
// query words it holds (not how often), so a solution and its student copy tied, and the solution often came
// first. SOLUTION_PENALTY is one title match: a solution ranks below every learner's page that matches as well,
// and below one that matches in the body where the solution matches in its title too.
// tests/browser/test_site.py checks the order in Chromium.
//
// A second rule: a page's whole-page hit (no #anchor: the page holds the words somewhere) ranks below that page's own
// section and API-entry hits for the same query (the API reference's whole-page hit for "ledger" came third, its
// snippet the page's opening lines, above its Ledger entry). searchtools.js scores the title and object hits before
// the full-text ones, so by then each page's best anchored score is known; it is forgotten when a new query's
// full-text search starts.
const SOLUTION_PENALTY = 15;
const anchoredBest = new Map();
if (typeof Search !== "undefined" && Search.performTermsSearch) {
  const performTermsSearch = Search.performTermsSearch;
  Search.performTermsSearch = (...args) => {
    anchoredBest.clear();
    return performTermsSearch(...args);
  };
}
var Scorer = {
  score: (result) => {
    const [docname, , anchor, , raw] = result;
    let score = docname.startsWith("exercises/solutions/") ? raw - SOLUTION_PENALTY : raw;
    if (anchor) anchoredBest.set(docname, Math.max(score, anchoredBest.get(docname) ?? -Infinity));
    else if (anchoredBest.has(docname)) score = Math.min(score, anchoredBest.get(docname) - 1);
    return score;
  },
  objNameMatch: 11,
  objPartialMatch: 6,
  objPrio: { 0: 15, 1: 5, 2: -5 },
  objPrioDefault: 0,
  title: 15,
  partialTitle: 7,
  term: 5,
  partialTerm: 2,
};
