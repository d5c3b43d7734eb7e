// The recipes "Train it yourself" offers (web/panels/training/train.js), and how one is made
// ready for the trainer. The recipes are the files of models/recipes/, the ones the CLI trains:
// the page fetches a recipe, fetches the files the core says its trainer reads (recipeFiles),
// and has the core write their texts into it (recipeWithTexts), so the run in the page is the
// CLI's run of the same recipe.
import { getJSON, getModule, siteUrl } from '../../store.js';

// What the page offers, in this order, and how: `steps` proposes a shorter run than the
// recipe's (the schedule then spans the shorter run: recipeWithSteps), `scoresEvery` has the
// worker score every head's prefix matching every N steps (the induction recipes).
/** @type {Readonly<Record<string, {steps?: number, scoresEvery?: number}>>} */
export const BROWSER_RECIPES = Object.freeze({
  'ioi-1l2h': {},
  'ioi-1l1h': {},
  'ioi-2l1h': {},
  'ioi-1l2h-nopos': {},
  'induction-2l': { scoresEvery: 10 },
  // 6,000 steps take minutes in a page. In 1,500 its induction head forms between steps 200 and
  // 300 (`circuitscope train models/recipes/char-1l-smeared.json --steps 1500`: the best head's
  // prefix matching 0.02 at step 200, 0.71 at 300, 0.73 at the end).
  'char-1l-smeared': { steps: 1500, scoresEvery: 10 },
});

const RECIPES = 'models/recipes/';

/**
 * The offered recipes as the site has them: {name: {recipe, steps, scoresEvery}}; a recipe the
 * site does not have is left out.
 */
export async function browserRecipes() {
  const out = {};
  for (const [name, how] of Object.entries(BROWSER_RECIPES)) {
    const recipe = await getJSON(`${RECIPES}${name}.json`);
    if (recipe && typeof recipe === 'object') out[name] = { recipe, steps: how.steps ?? recipe.steps, scoresEvery: how.scoresEvery ?? 0 };
  }
  return out;
}

/** Whether a recipe's trainer reads files (which the page downloads first). */
export const readsFiles = async (recipe) => (await getModule()).recipeFiles(recipe).length > 0;

/**
 * The recipe ready for a trainer, run for `steps` steps: the files its trainer reads fetched
 * from the site (relative to models/recipes/, as the CLI reads them) and written into it.
 */
export async function resolveRecipe(recipe, steps) {
  const cs = await getModule();
  const texts = {};
  for (const path of cs.recipeFiles(recipe)) {
    const url = new URL(path, siteUrl(RECIPES)).href;
    const res = await fetch(url);
    if (!res.ok) throw new Error(`could not download ${path.replace(/^(\.\.\/)+/, '')} (HTTP ${res.status})`);
    texts[path] = await res.text();
  }
  // Steps first: the texts can be megabytes, and each call copies its recipe in and out.
  return cs.recipeWithTexts(cs.recipeWithSteps(recipe, steps), texts);
}
