// The full OV circuit of the chosen head (framework paper, one-layer section; seed 000).
import { definePanel } from '../panel.js';
import { circuitPanel } from './heat.js';

export default definePanel(circuitPanel({
  kind: 'ov', title: 'Full OV circuit', rowName: 'src', colName: 'out',
  explain: 'W_E W_V W_O W_U: rows are the attended source token, columns the output logit it raises (red) or lowers (blue).',
}));
