# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
# Numbers sorted ascending, one a line (sort -g first): "median q1 q3",
# linear between ranks; nothing for no input. Shared by the bench scripts.
{ v[NR] = $1 }
function q(p,  i, f) { i = 1 + p * (NR - 1); f = int(i); return f < NR ? v[f] + (i - f) * (v[f + 1] - v[f]) : v[f] }
END { if (NR) printf "%.3f %.3f %.3f\n", q(0.5), q(0.25), q(0.75) }
