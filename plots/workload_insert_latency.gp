# annlab figure: workload_insert_latency
#
# Insert latency at each insert step of a streaming workload: p50 (solid)
# and p99 (dashed, the engine's second variant) of the step's inserts.
#
# Data: plots/workload_insert_latency.dat in the run directory (the variable `data`):
# series i (1..n_series) is gnuplot index 2i-2 (its points) and 2i-1 (the
# same sorted by x, the line); columns: step, insert latency (us), step.
#
# `annlab plot RUN_DIR` runs this file after the variables it sets for the
# run (plots/README.md lists them); `annlab plot RUN_DIR --template FILE`
# runs an edited copy instead.  Restyle below; the harness computes only
# what depends on the data.

# ---- style: one colour per engine, one dash type and marker per variant,
# filled markers warm, open ones (larger, so they ring a warm marker of the
# same value) cold
palette = "#1f77b4 #d62728 #2ca02c #9467bd #ff7f0e #17becf #8c564b #e377c2 #7f7f7f #bcbd22 #000000 #393b79"
array dash_types[5] = [1, 2, 4, 5, 3]
array filled_markers[5] = [7, 5, 9, 13, 11]
array open_markers[5] = [6, 4, 8, 12, 10]
color(i) = word(palette, series_color[i] % words(palette) + 1)
dash(i) = dash_types[series_variant[i] % 5 + 1]
marker(i) = series_cold[i] ? open_markers[series_variant[i] % 5 + 1] : filled_markers[series_variant[i] % 5 + 1]
marker_size(i) = series_cold[i] ? 1.8 : 1.3

set title fig_title
set xlabel x_label
set ylabel y_label
set grid
# the legend below the plot, in the columns and rows the harness fitted to
# the canvas width (the canvas height grows with the rows)
set key outside below center Left reverse maxcols key_cols maxrows key_rows box spacing 1.1 samplen 3 width 1
set format y '%g'
set bmargin key_rows + 5
if (x_log) { set logscale x } else { unset logscale x }
if (y_log) { set logscale y } else { unset logscale y }
set xrange @x_range
set yrange @y_range
set offsets graph 0.05, graph 0.05, graph 0.05, graph 0.05

set terminal pngcairo noenhanced size width, height font 'Sans,11'
set output output . ".png"
plot for [i = 1:n_series] data index 2 * i - 1 using 1:2 with linespoints pt marker(i) ps marker_size(i) \
     lw 2 dt dash(i) lc rgb color(i) title series_name[i]
set terminal svg noenhanced size width, height font 'Sans,11' dynamic
set output output . ".svg"
replot
