package monitoring

import (
	"bytes"
	"encoding/xml"
	"fmt"
	"html"
	"math"
	"strings"
	"testing"
	"time"
)

// A small SVG renderer for the dashboard's picture: a grid of line charts, one line
// per series, with a title, y-axis ticks in the panel's unit, the time since the run
// began on the x axis, a legend, and the run's events as dashed marks.

type chartPoint struct {
	at    time.Time
	value float64
}

type chartSeries struct {
	label  string
	points []chartPoint
}

type chart struct {
	title, unit string
	series      []chartSeries
}

// chartEvent is a moment of the run marked in every chart.
type chartEvent struct {
	at    time.Time
	label string
}

const (
	chartWidth   = 470
	chartHeight  = 250
	chartGap     = 14
	plotLeft     = 62
	plotTop      = 30
	plotWidth    = 270
	plotHeight   = 180
	legendLeft   = plotLeft + plotWidth + 12
	legendLines  = 11
	legendChars  = 22
	headerHeight = 46
)

// palette is Grafana's classic series palette.
var palette = []string{"#7EB26D", "#EAB839", "#6ED0E0", "#EF843C", "#E24D42", "#1F78C1", "#BA43A9", "#705DA0", "#508642", "#CCA300", "#447EBC", "#C15C17"}

// renderDashboard draws the charts columns wide; step is the query resolution: two
// points further apart are a gap, not a line.
func renderDashboard(heading string, charts []chart, events []chartEvent, start, end time.Time, step time.Duration, columns int) []byte {
	rows := (len(charts) + columns - 1) / columns
	width := columns*chartWidth + (columns+1)*chartGap
	height := headerHeight + rows*(chartHeight+chartGap) + chartGap
	var b bytes.Buffer
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="Helvetica, Arial, sans-serif">`+"\n", width, height, width, height)
	fmt.Fprintf(&b, `<rect width="%d" height="%d" fill="#f4f5f5"/>`+"\n", width, height)
	fmt.Fprintf(&b, `<text x="%d" y="28" font-size="18" font-weight="bold" fill="#222">%s</text>`+"\n", chartGap, html.EscapeString(heading))
	for i, c := range charts {
		x := chartGap + (i%columns)*(chartWidth+chartGap)
		y := headerHeight + (i/columns)*(chartHeight+chartGap)
		drawChart(&b, c, events, start, end, step, x, y)
	}
	b.WriteString("</svg>\n")
	return b.Bytes()
}

func drawChart(b *bytes.Buffer, c chart, events []chartEvent, start, end time.Time, step time.Duration, x0, y0 int) {
	fmt.Fprintf(b, `<g transform="translate(%d,%d)">`+"\n", x0, y0)
	fmt.Fprintf(b, `<rect width="%d" height="%d" rx="3" fill="#fff" stroke="#d8d9da"/>`+"\n", chartWidth, chartHeight)
	fmt.Fprintf(b, `<text x="10" y="19" font-size="13" font-weight="bold" fill="#222">%s</text>`+"\n", html.EscapeString(c.title))

	low, high := valueRange(c.series)
	ticks := niceTicks(low, high, 4, c.unit)
	low, high = ticks[0], ticks[len(ticks)-1]
	span := end.Sub(start).Seconds()
	px := func(at time.Time) float64 { return plotLeft + at.Sub(start).Seconds()/span*plotWidth }
	py := func(v float64) float64 { return plotTop + plotHeight - (v-low)/(high-low)*plotHeight }

	for _, tick := range ticks {
		y := py(tick)
		fmt.Fprintf(b, `<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="#eee"/>`+"\n", plotLeft, y, plotLeft+plotWidth, y)
		fmt.Fprintf(b, `<text x="%d" y="%.1f" font-size="10" fill="#555" text-anchor="end">%s</text>`+"\n", plotLeft-5, y+3, html.EscapeString(formatValue(tick, c.unit)))
	}
	for i := 0; i <= 4; i++ {
		at := start.Add(time.Duration(float64(end.Sub(start)) * float64(i) / 4))
		x := px(at)
		elapsed := at.Sub(start).Round(time.Second)
		fmt.Fprintf(b, `<text x="%.1f" y="%d" font-size="10" fill="#555" text-anchor="middle">%d:%02d</text>`+"\n", x, plotTop+plotHeight+14, int(elapsed.Minutes()), int(elapsed.Seconds())%60)
	}
	fmt.Fprintf(b, `<rect x="%d" y="%d" width="%d" height="%d" fill="none" stroke="#ccc"/>`+"\n", plotLeft, plotTop, plotWidth, plotHeight)
	for _, e := range events {
		if e.at.Before(start) || e.at.After(end) {
			continue
		}
		x := px(e.at)
		fmt.Fprintf(b, `<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="#888" stroke-dasharray="3,3"><title>%s</title></line>`+"\n", x, plotTop, x, plotTop+plotHeight, html.EscapeString(e.label))
	}

	for i, s := range c.series {
		color := palette[i%len(palette)]
		for _, run := range splitAtGaps(s.points, step) {
			if len(run) == 1 {
				fmt.Fprintf(b, `<circle cx="%.1f" cy="%.1f" r="1.5" fill="%s"/>`+"\n", px(run[0].at), py(run[0].value), color)
				continue
			}
			var pts strings.Builder
			for j, p := range run {
				if j > 0 {
					pts.WriteByte(' ')
				}
				fmt.Fprintf(&pts, "%.1f,%.1f", px(p.at), py(p.value))
			}
			fmt.Fprintf(b, `<polyline points="%s" fill="none" stroke="%s" stroke-width="1.5"/>`+"\n", pts.String(), color)
		}
	}

	for i, s := range c.series {
		if i == legendLines-1 && len(c.series) > legendLines {
			fmt.Fprintf(b, `<text x="%d" y="%d" font-size="10" fill="#555">+%d more</text>`+"\n", legendLeft, plotTop+8+i*15, len(c.series)-i)
			break
		}
		y := plotTop + i*15
		label := shorten(s.label, legendChars)
		fmt.Fprintf(b, `<rect x="%d" y="%d" width="10" height="3" fill="%s"/>`+"\n", legendLeft, y+4, palette[i%len(palette)])
		fmt.Fprintf(b, `<text x="%d" y="%d" font-size="10" fill="#333">%s</text>`+"\n", legendLeft+14, y+9, html.EscapeString(label))
	}
	b.WriteString("</g>\n")
}

// shorten keeps both ends of a long label: series often differ only at the end
// (/validate-linstor-io-v1-linstorcluster, ...-linstorsatellite).
func shorten(label string, n int) string {
	r := []rune(label)
	if len(r) <= n {
		return label
	}
	head := (n - 1) / 3
	return string(r[:head]) + "…" + string(r[len(r)-(n-1-head):])
}

// valueRange is the range of the finite values, 0 included (the panels count and
// measure from zero).
func valueRange(series []chartSeries) (low, high float64) {
	for _, s := range series {
		for _, p := range s.points {
			if math.IsNaN(p.value) || math.IsInf(p.value, 0) {
				continue
			}
			low, high = math.Min(low, p.value), math.Max(high, p.value)
		}
	}
	if high == low {
		high = low + 1
	}
	return low, high
}

// niceTicks are about n+1 round values from at most low to at least high; bytes and
// durations are round in the unit formatValue writes (25 GiB, 5 min).
func niceTicks(low, high float64, n int, unit string) []float64 {
	scale, largest := 1.0, math.Max(math.Abs(low), math.Abs(high))
	switch unit {
	case "bytes":
		for largest >= scale*1024 {
			scale *= 1024
		}
	case "s":
		for _, s := range []float64{86400, 3600, 60} {
			if largest >= s {
				scale = s
				break
			}
		}
	}
	raw := (high - low) / scale / float64(n)
	magnitude := math.Pow(10, math.Floor(math.Log10(raw)))
	step := magnitude
	for _, m := range []float64{1, 2, 2.5, 5, 10} {
		if m*magnitude >= raw {
			step = m * magnitude
			break
		}
	}
	var out []float64
	for v := math.Floor(low/scale/step) * step; ; v += step {
		out = append(out, v*scale)
		if v*scale >= high {
			return out
		}
	}
}

// splitAtGaps cuts a series where Prometheus returned no point for more than a step
// and a half (the series was absent there), and drops values a line cannot show.
func splitAtGaps(points []chartPoint, step time.Duration) [][]chartPoint {
	var runs [][]chartPoint
	var run []chartPoint
	for _, p := range points {
		if math.IsNaN(p.value) || math.IsInf(p.value, 0) {
			continue
		}
		if len(run) > 0 && p.at.Sub(run[len(run)-1].at) > step*3/2 {
			runs = append(runs, run)
			run = nil
		}
		run = append(run, p)
	}
	if len(run) > 0 {
		runs = append(runs, run)
	}
	return runs
}

// formatValue writes a tick in the panel's Grafana unit.
func formatValue(v float64, unit string) string {
	switch unit {
	case "bytes":
		for _, u := range []struct {
			name string
			size float64
		}{{"TiB", 1 << 40}, {"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}} {
			if math.Abs(v) >= u.size {
				return trimFloat(v/u.size) + " " + u.name
			}
		}
		return trimFloat(v) + " B"
	case "percentunit":
		return trimFloat(v*100) + "%"
	case "s":
		switch a := math.Abs(v); {
		case a >= 86400:
			return trimFloat(v/86400) + " d"
		case a >= 3600:
			return trimFloat(v/3600) + " h"
		case a >= 60:
			return trimFloat(v/60) + " min"
		}
		return trimFloat(v) + " s"
	case "reqps", "ops":
		return trimFloat(v) + "/s"
	}
	switch a := math.Abs(v); {
	case a >= 1e6:
		return trimFloat(v/1e6) + "M"
	case a >= 1e3:
		return trimFloat(v/1e3) + "k"
	}
	return trimFloat(v)
}

func trimFloat(v float64) string {
	s := fmt.Sprintf("%.2f", v)
	s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
	if s == "-0" {
		return "0"
	}
	return s
}

// The renderer draws what it is given: a line per series through the right places,
// a gap where a series was absent, legends, and well-formed SVG.
func TestRenderDashboard(t *testing.T) {
	start := time.Unix(1_000_000, 0)
	at := func(s int) time.Time { return start.Add(time.Duration(s) * time.Second) }
	charts := []chart{{title: "Satellites by state <ONLINE>", unit: "short", series: []chartSeries{
		{label: "ONLINE", points: []chartPoint{{at(0), 8}, {at(10), 8}, {at(20), 7}}},
		// absent from 30 to 70 s: two lines
		{label: "OFFLINE", points: []chartPoint{{at(20), 1}, {at(30), 1}, {at(80), 1}, {at(90), 0}}},
	}}, {title: "Free", unit: "bytes", series: []chartSeries{{label: "mon-1/thin", points: []chartPoint{{at(90), 100 << 30}, {at(100), 5 << 30}}}}}}
	svg := renderDashboard("test", charts, []chartEvent{{at(20), "faults"}}, start, at(100), 10*time.Second, 2)

	dec := xml.NewDecoder(bytes.NewReader(svg))
	polylines, texts := 0, []string{}
	for {
		tok, err := dec.Token()
		if err != nil {
			if err.Error() != "EOF" {
				t.Fatalf("not well-formed XML: %v\n%s", err, svg)
			}
			break
		}
		switch el := tok.(type) {
		case xml.StartElement:
			if el.Name.Local == "polyline" {
				polylines++
			}
		case xml.CharData:
			if s := strings.TrimSpace(string(el)); s != "" {
				texts = append(texts, s)
			}
		}
	}
	// ONLINE one line, OFFLINE two (the gap), Free one.
	if polylines != 4 {
		t.Errorf("%d polylines, want 4:\n%s", polylines, svg)
	}
	for _, want := range []string{"Satellites by state <ONLINE>", "ONLINE", "OFFLINE", "mon-1/thin", "100 GiB", "1:40", "faults"} {
		found := false
		for _, s := range texts {
			found = found || s == want
		}
		if !found {
			t.Errorf("the picture has no text %q: %q", want, texts)
		}
	}
	if got := shorten("/validate-linstor-io-v1-linstorcluster", legendChars); got != "/valida…linstorcluster" {
		t.Errorf("shorten: %q", got)
	}
	if got := formatValue(niceTicks(0, 400, 4, "s")[1], "s"); got != "2 min" {
		t.Errorf("the first tick of 0..400 s is %q, want 2 min", got)
	}
	// ONLINE at 8 of a 0..8 axis starts at the top left of the plot.
	if !strings.Contains(string(svg), fmt.Sprintf(`points="%d.0,%d.0 `, plotLeft, plotTop)) {
		t.Errorf("the ONLINE line does not start at the plot's top left (%d,%d):\n%s", plotLeft, plotTop, svg)
	}
}
