// The website's search ranking (site/conf.py's html_search_scorer: Sphinx writes it into language_data.js, which
// loads after searchtools.js and so replaces its default Scorer before any search runs). Sphinx's default weights,
// unchanged, plus one rule: a workshop solution (exercises/solutions/, facilitator material) ranks below the pages
// a learner reads for the same words, the series and the workshop's student copies. Sphinx scores a page by which
// query words it holds (not how often), so a solution and its student copy tied, and the solution often came
// first. SOLUTION_PENALTY is one title match: a solution ranks below every learner's page that matches as well,
// and below one that matches in the body where the solution matches in its title too.
// tests/browser/test_site.py checks the order in Chromium.
const SOLUTION_PENALTY = 15;
var Scorer = {
  score: (result) => {
    const [docname, , , , score] = result;
    return docname.startsWith("exercises/solutions/") ? score - SOLUTION_PENALTY : score;
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
