// The full QK circuit of the chosen head (framework paper, one-layer section; seed 000).
import { definePanel } from '../panel.js';
import { circuitPanel } from './heat.js';

export default definePanel(circuitPanel({
  kind: 'qk', title: 'Full QK circuit', rowName: 'dest', colName: 'src',
  explain: 'W_E W_Q W_Kᵀ W_Eᵀ: rows are the destination (query) token, columns the source (key) token; red = attends more, blue = less (unscaled scores). For a layer-1 head this is the direct-path term only.',
}));
