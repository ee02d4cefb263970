package main

import (
	"fmt"
	"html"
	"strings"
)

// chart draws decisions per second at the ratio concurrency as an SVG:
// one panel per backend and scenario, one bar per approach, each panel on
// its own linear scale (a denial storm served from the denial cache is
// orders of magnitude above the rest).
func (r *report) chart() string {
	g := r.ratioGoroutines()
	type panel struct {
		title string
		bars  []result
	}
	var panels [][]panel // rows: backends; columns: scenarios
	var dbs []string
	for _, c := range r.results {
		if len(dbs) == 0 || dbs[len(dbs)-1] != c.DB {
			dbs = append(dbs, c.DB)
		}
	}
	rowHeights := make([]int, 0, len(dbs))
	const (
		panelW   = 520
		labelW   = 250
		barH     = 13
		barGap   = 5
		titleH   = 26
		valueW   = 90
		margin   = 16
		headerH  = 44
		colorOff = "#999"
	)
	for _, db := range dbs {
		var row []panel
		most := 0
		for _, sc := range r.cfg.scenarios {
			p := panel{title: fmt.Sprintf("%s · %s", db, sc)}
			for _, c := range r.results {
				if c.DB == db && c.Scenario == sc && c.Goroutines == g {
					p.bars = append(p.bars, c)
				}
			}
			most = max(most, len(p.bars))
			row = append(row, p)
		}
		panels = append(panels, row)
		rowHeights = append(rowHeights, titleH+most*(barH+barGap)+margin)
	}
	width := margin + len(r.cfg.scenarios)*(panelW+margin)
	height := headerH
	for _, h := range rowHeights {
		height += h
	}
	colors := map[kind]string{
		kindFloor: "#4d4d4d", kindReference: "#b07aa1", kindLocking: "#e15759",
		kindIncrement: "#76b7b2", kindLimiter: "#4e79a7", kindAPIKey: "#f28e2b",
		kindRedis: "#4e79a7", kindRedisRate: "#e15759", kindGCRA: "#59a14f", kindRedisGCRA: "#59a14f",
	}
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" font-family="Helvetica, Arial, sans-serif" font-size="11">`+"\n", width, height)
	fmt.Fprintf(&b, `<rect width="100%%" height="100%%" fill="white"/>`+"\n")
	fmt.Fprintf(&b, `<text x="%d" y="22" font-size="15" font-weight="bold">Decisions per second at %d goroutines (longer is better; each panel has its own scale)</text>`+"\n", margin, g)
	fmt.Fprintf(&b, `<text x="%d" y="38" fill="#555">%s</text>`+"\n", margin, html.EscapeString(r.settings()))
	y := headerH
	for i, row := range panels {
		for j, p := range row {
			x := margin + j*(panelW+margin)
			fmt.Fprintf(&b, `<text x="%d" y="%d" font-size="12" font-weight="bold">%s</text>`+"\n", x, y+16, html.EscapeString(p.title))
			top := 1.0
			for _, c := range p.bars {
				top = max(top, c.PerSecond())
			}
			for k, c := range p.bars {
				by := y + titleH + k*(barH+barGap)
				w := int(float64(panelW-labelW-valueW) * c.PerSecond() / top)
				color, ok := colors[c.Kind]
				if !ok {
					color = colorOff
				}
				if !c.OK {
					color = "#d62728"
				}
				fmt.Fprintf(&b, `<text x="%d" y="%d" text-anchor="end">%s</text>`+"\n", x+labelW-6, by+barH-2, html.EscapeString(c.Approach))
				fmt.Fprintf(&b, `<rect x="%d" y="%d" width="%d" height="%d" fill="%s"/>`+"\n", x+labelW, by, max(w, 1), barH, color)
				label := groupDigits(c.PerSecond())
				if !c.OK {
					label += " FAIL"
				}
				fmt.Fprintf(&b, `<text x="%d" y="%d">%s</text>`+"\n", x+labelW+max(w, 1)+4, by+barH-2, label)
			}
		}
		y += rowHeights[i]
	}
	b.WriteString("</svg>\n")
	return b.String()
}
