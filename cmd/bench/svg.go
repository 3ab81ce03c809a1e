package main

import (
	"fmt"
	"html"
	"math"
	"strings"
)

// convergenceSVG draws the timeline: satellites ONLINE and pools with capacity on the
// upper panel, the operator's API writes, the writes that changed something and its
// LINSTOR requests per second on the lower one, with the phases marked.
func convergenceSVG(r *results) string {
	const (
		width, height      = 960, 640
		width0             = width
		left, right        = 80, 200 // the legend lives in the right margin
		top1, h1, gap, h2  = 50, 240, 70, 220
		plotW              = width - left - right
		top2               = top1 + h1 + gap
		colOnline, colPool = "#1f77b4", "#2ca02c"
		colWrites, colEff  = "#d62728", "#ff7f0e"
		colLinstor         = "#9467bd"
	)
	pts := r.Timeline
	xmax := 1
	for _, p := range pts {
		xmax = max(xmax, p.Second)
	}
	for _, p := range r.Phases {
		xmax = max(xmax, p.ToSecond)
	}
	var sb strings.Builder
	w := func(format string, a ...any) { fmt.Fprintf(&sb, format, a...) }
	w(`<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif" font-size="12">`+"\n", width, height, width, height)
	w(`<rect width="100%%" height="100%%" fill="white"/>` + "\n")
	title := fmt.Sprintf("linstor-operator scale benchmark: %d nodes", r.Nodes)
	if r.OperatorRevision != "" {
		title += " (" + r.OperatorRevision + ")"
	}
	w(`<text x="%d" y="24" font-size="16" font-weight="bold">%s</text>`+"\n", left, html.EscapeString(title))

	xpos := func(s int) float64 { return left + float64(s)/float64(xmax)*plotW }

	// Phase shading and markers on both panels.
	for _, p := range r.Phases {
		if p.Name == "steady" && p.ToSecond > p.FromSecond {
			for _, top := range []int{top1, top2} {
				h := h1
				if top == top2 {
					h = h2
				}
				w(`<rect x="%.1f" y="%d" width="%.1f" height="%d" fill="#f0f0f0"/>`+"\n", xpos(p.FromSecond), top, xpos(p.ToSecond)-xpos(p.FromSecond), h)
			}
			w(`<text x="%.1f" y="%d" fill="#666">steady state (%s)</text>`+"\n", xpos(p.FromSecond)+4, top1+14, html.EscapeString(r.SteadyWindow))
		}
	}
	// Markers: dashed lines through both panels, labelled between the panels (one row
	// each, as they are often close together).
	row := 0
	marker := func(s int, label string) {
		x := xpos(s)
		w(`<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="#888" stroke-dasharray="4,3"/>`+"\n", x, top1, x, top2+h2)
		w(`<text x="%.1f" y="%d" fill="#444">%s</text>`+"\n", x+3, top1+h1+36+14*row, html.EscapeString(label))
		row++
	}
	marker(r.SamplesAppliedSecond, "samples applied")
	if r.SecondsToAvailable != nil {
		marker(r.SamplesAppliedSecond+*r.SecondsToAvailable, "LinstorCluster Available")
	}

	// Upper panel: counts.
	ymax1 := niceMax(float64(max(r.Nodes, r.ExpectedPools)))
	axes(&sb, left, top1, plotW, h1, xmax, ymax1, "nodes / pools", false)
	// Both lines often coincide: ONLINE wide underneath, pools dashed on top.
	line(&sb, pts, func(p point) float64 { return float64(p.Online) }, xpos, top1, h1, ymax1, colOnline, 4, "")
	line(&sb, pts, func(p point) float64 { return float64(p.Pools) }, xpos, top1, h1, ymax1, colPool, 1.5, "6,3")

	// Lower panel: rates.
	ymax2 := 1.0
	for _, p := range pts {
		ymax2 = math.Max(ymax2, float64(max(p.APIWrites, p.EffectiveWrites, p.LinstorRequests)))
	}
	ymax2 = niceMax(ymax2)
	axes(&sb, left, top2, plotW, h2, xmax, ymax2, "per second", true)
	line(&sb, pts, func(p point) float64 { return float64(p.APIWrites) }, xpos, top2, h2, ymax2, colWrites, 1.5, "")
	line(&sb, pts, func(p point) float64 { return float64(p.EffectiveWrites) }, xpos, top2, h2, ymax2, colEff, 1.5, "6,3")
	line(&sb, pts, func(p point) float64 { return float64(p.LinstorRequests) }, xpos, top2, h2, ymax2, colLinstor, 1.5, "")

	legend := func(y int, color string, width float64, dash string, label ...string) {
		x := width0 - right + 16
		w(`<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="%s" stroke-width="%g" stroke-dasharray="%s"/>`+"\n", x, y-4, x+22, y-4, color, width, dash)
		for i, l := range label {
			w(`<text x="%d" y="%d">%s</text>`+"\n", x+28, y+14*i, html.EscapeString(l))
		}
	}
	legend(top1+20, colOnline, 4, "", "satellites ONLINE")
	legend(top1+40, colPool, 1.5, "6,3", "storage pools", "with capacity")
	legend(top2+20, colWrites, 1.5, "", "operator API writes/s")
	legend(top2+40, colEff, 1.5, "6,3", "writes that changed", "an object /s")
	legend(top2+74, colLinstor, 1.5, "", "LINSTOR requests/s")
	w("</svg>\n")
	return sb.String()
}

// axes draws a panel's frame, grid, ticks and labels.
func axes(sb *strings.Builder, left, top, w, h, xmax int, ymax float64, ylabel string, xlabel bool) {
	fmt.Fprintf(sb, `<rect x="%d" y="%d" width="%d" height="%d" fill="none" stroke="#333"/>`+"\n", left, top, w, h)
	ystep := niceStep(ymax, 5)
	for v := 0.0; v <= ymax+ystep/1000; v += ystep {
		y := float64(top+h) - v/ymax*float64(h)
		fmt.Fprintf(sb, `<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="#ddd"/>`+"\n", left, y, left+w, y)
		fmt.Fprintf(sb, `<text x="%d" y="%.1f" text-anchor="end">%s</text>`+"\n", left-6, y+4, trimFloat(v))
	}
	xstep := niceStep(float64(xmax), 10)
	for v := 0.0; v <= float64(xmax)+xstep/1000; v += xstep {
		x := float64(left) + v/float64(xmax)*float64(w)
		fmt.Fprintf(sb, `<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="#333"/>`+"\n", x, top+h, x, top+h+5)
		fmt.Fprintf(sb, `<text x="%.1f" y="%d" text-anchor="middle">%s</text>`+"\n", x, top+h+18, trimFloat(v))
	}
	cy := top + h/2
	fmt.Fprintf(sb, `<text x="%d" y="%d" text-anchor="middle" transform="rotate(-90 %d %d)">%s</text>`+"\n", left-50, cy, left-50, cy, html.EscapeString(ylabel))
	if xlabel {
		fmt.Fprintf(sb, `<text x="%d" y="%d" text-anchor="middle">seconds since the operator started</text>`+"\n", left+w/2, top+h+40)
	}
}

func line(sb *strings.Builder, pts []point, f func(point) float64, xpos func(int) float64, top, h int, ymax float64, color string, width float64, dash string) {
	if len(pts) == 0 {
		return
	}
	fmt.Fprintf(sb, `<polyline fill="none" stroke="%s" stroke-width="%g" stroke-dasharray="%s" stroke-linejoin="round" points="`, color, width, dash)
	for i, p := range pts {
		if i > 0 {
			sb.WriteByte(' ')
		}
		y := float64(top+h) - math.Min(f(p), ymax)/ymax*float64(h)
		fmt.Fprintf(sb, "%.1f,%.1f", xpos(p.Second), y)
	}
	sb.WriteString(`"/>` + "\n")
}

// niceStep is a step of 1, 2 or 5 times a power of ten giving about n ticks up to v.
func niceStep(v float64, n int) float64 {
	if v <= 0 {
		return 1
	}
	raw := v / float64(n)
	p := math.Pow(10, math.Floor(math.Log10(raw)))
	for _, m := range []float64{1, 2, 5, 10} {
		if raw <= m*p {
			return m * p
		}
	}
	return 10 * p
}

// niceMax rounds v up to a multiple of its tick step.
func niceMax(v float64) float64 {
	if v <= 0 {
		return 1
	}
	s := niceStep(v, 5)
	return math.Ceil(v/s) * s
}

func trimFloat(v float64) string {
	if v == math.Trunc(v) {
		return fmt.Sprintf("%.0f", v)
	}
	return fmt.Sprintf("%g", v)
}
