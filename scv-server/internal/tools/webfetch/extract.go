package webfetch

import (
	"regexp"
	"strings"

	"github.com/PuerkitoBio/goquery"
	"golang.org/x/net/html"
	"golang.org/x/net/html/atom"
)

// chromeTags are elements a reader skips: scripts and styles, navigation,
// form controls, embedded objects and dialogs.
var chromeTags = map[atom.Atom]bool{
	atom.Script: true, atom.Style: true, atom.Noscript: true, atom.Template: true, atom.Svg: true,
	atom.Canvas: true, atom.Iframe: true, atom.Object: true, atom.Embed: true, atom.Nav: true,
	atom.Aside: true, atom.Menu: true, atom.Dialog: true, atom.Button: true, atom.Select: true,
	atom.Input: true, atom.Textarea: true, atom.Option: true, atom.Datalist: true,
}

// chromeRoles are ARIA roles of page chrome.
var chromeRoles = map[string]bool{
	"navigation": true, "banner": true, "contentinfo": true, "complementary": true, "search": true,
	"dialog": true, "menu": true, "menubar": true, "toolbar": true,
}

// chromeWords are class or id words (whole names, or parts between - and
// _) that name page chrome; chromeNames are whole names with the
// separators removed.
var (
	chromeWords = map[string]bool{
		"nav": true, "navbar": true, "navigation": true, "menu": true, "breadcrumb": true, "breadcrumbs": true,
		"sidebar": true, "cookie": true, "cookies": true, "consent": true, "advert": true, "advertisement": true,
		"ads": true, "social": true, "share": true, "sharing": true, "newsletter": true, "promo": true, "masthead": true,
		"related": true, "recommended": true, "outbrain": true, "taboola": true, "sponsored": true,
	}
	chromeNames = map[string]bool{
		"skiplink": true, "siteheader": true, "sitefooter": true, "globalheader": true, "globalfooter": true,
	}
)

// chromeAttr reports whether a class or id value names page chrome. It
// runs for every element with a class, so it lowercases into a stack
// buffer instead of allocating (map lookups with string(bytes) do not
// allocate).
func chromeAttr(v string) bool {
	var lower, joined [64]byte
	for len(v) > 0 {
		// Next whitespace-separated name.
		i := 0
		for i < len(v) && isSpaceByte(v[i]) {
			i++
		}
		v = v[i:]
		j := 0
		for j < len(v) && !isSpaceByte(v[j]) {
			j++
		}
		name := v[:j]
		v = v[j:]
		if name == "" {
			continue
		}
		if len(name) > len(lower) {
			if chromeName(name) {
				return true
			}
			continue
		}
		l := lower[:len(name)]
		jn := joined[:0]
		for k := 0; k < len(name); k++ {
			c := name[k]
			if 'A' <= c && c <= 'Z' {
				c += 'a' - 'A'
			}
			l[k] = c
			if c != '-' && c != '_' {
				jn = append(jn, c)
			}
		}
		if chromeWords[string(l)] || chromeNames[string(jn)] {
			return true
		}
		// The parts between - and _.
		start := 0
		for k := 0; k <= len(l); k++ {
			if k == len(l) || l[k] == '-' || l[k] == '_' {
				if k > start && chromeWords[string(l[start:k])] {
					return true
				}
				start = k + 1
			}
		}
	}
	return false
}

var separators = strings.NewReplacer("-", "", "_", "")

// chromeName is chromeAttr for one name, allocating: for names longer
// than its buffer. Case folds in ASCII only, as HTML class matching does.
func chromeName(name string) bool {
	name = strings.Map(func(r rune) rune {
		if 'A' <= r && r <= 'Z' {
			return r + 'a' - 'A'
		}
		return r
	}, name)
	if chromeWords[name] || chromeNames[separators.Replace(name)] {
		return true
	}
	for _, w := range strings.FieldsFunc(name, func(r rune) bool { return r == '-' || r == '_' }) {
		if chromeWords[w] {
			return true
		}
	}
	return false
}

func isSpaceByte(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'
}

// hiddenStyle matches inline styles that hide an element.
var hiddenStyle = regexp.MustCompile(`(?i)display\s*:\s*none|visibility\s*:\s*hidden`)

// stripChrome removes page chrome and returns the node to convert: the
// page's only <main> (or role=main), else its only <article>, else the
// body.
func stripChrome(doc *goquery.Document) *html.Node {
	root := doc.Get(0)
	var mains, articles []*html.Node
	var body *html.Node
	var remove []*html.Node
	// One walk over the tree (at most maxDepth deep) decides what goes.
	var walk func(n *html.Node, inSection bool)
	walk = func(n *html.Node, inSection bool) {
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			if c.Type != html.ElementNode {
				continue
			}
			if isChrome(c, inSection) {
				remove = append(remove, c)
				continue
			}
			role := attr(c, "role")
			switch {
			case c.DataAtom == atom.Main || role == "main":
				mains = append(mains, c)
			case c.DataAtom == atom.Article:
				articles = append(articles, c)
			case c.DataAtom == atom.Body && body == nil:
				body = c
			}
			walk(c, inSection || c.DataAtom == atom.Article || c.DataAtom == atom.Main || c.DataAtom == atom.Section || role == "main")
		}
	}
	walk(root, false)
	for _, n := range remove {
		if n.Parent != nil {
			n.Parent.RemoveChild(n)
		}
	}
	for _, cand := range [][]*html.Node{mains, articles} {
		if len(cand) == 1 && hasText(cand[0]) {
			return cand[0]
		}
	}
	if body != nil {
		return body
	}
	return root
}

// isChrome decides whether the element n is page chrome. inSection tells
// whether n sits in sectioning content (article, main, section).
func isChrome(n *html.Node, inSection bool) bool {
	if chromeTags[n.DataAtom] {
		return true
	}
	switch n.DataAtom {
	case atom.Header, atom.Footer:
		// A header or footer belongs to the page (a banner) unless it
		// sits in sectioning content, where it holds the article's own
		// title or notes.
		if !inSection {
			return true
		}
	case atom.Form:
		// A form is chrome (search, sign-up, comments) unless it wraps
		// the content, as ASP.NET pages wrap the whole page in one.
		if !contains(n, atom.Main, atom.Article, atom.H1, atom.H2, atom.P) {
			return true
		}
	}
	var cls, id string
	for _, a := range n.Attr {
		switch a.Key {
		case "hidden":
			return true
		case "aria-hidden":
			if strings.EqualFold(strings.TrimSpace(a.Val), "true") {
				return true
			}
		case "role":
			if chromeRoles[strings.ToLower(strings.TrimSpace(a.Val))] {
				return true
			}
		case "style":
			if hiddenStyle.MatchString(a.Val) {
				return true
			}
		case "class":
			cls = a.Val
		case "id":
			id = a.Val
		}
	}
	switch n.DataAtom {
	case atom.Html, atom.Body, atom.Main, atom.Article:
		return false
	}
	if (cls != "" && chromeAttr(cls) || id != "" && chromeAttr(id)) && !contains(n, atom.Main, atom.Article, atom.H1) {
		return true
	}
	return false
}

// hasText reports whether n holds any non-space text.
func hasText(n *html.Node) bool {
	stack := []*html.Node{n}
	for len(stack) > 0 {
		c := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if c.Type == html.TextNode && strings.TrimSpace(c.Data) != "" {
			return true
		}
		for k := c.FirstChild; k != nil; k = k.NextSibling {
			stack = append(stack, k)
		}
	}
	return false
}

// contains reports whether an element below n is one of tags (or has
// role=main when tags include main).
func contains(n *html.Node, tags ...atom.Atom) bool {
	stack := []*html.Node{n}
	for len(stack) > 0 {
		c := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		for k := c.FirstChild; k != nil; k = k.NextSibling {
			if k.Type != html.ElementNode {
				continue
			}
			for _, t := range tags {
				if k.DataAtom == t || t == atom.Main && attr(k, "role") == "main" {
					return true
				}
			}
			stack = append(stack, k)
		}
	}
	return false
}

func attr(n *html.Node, key string) string {
	for _, a := range n.Attr {
		if a.Key == key {
			return strings.ToLower(strings.TrimSpace(a.Val))
		}
	}
	return ""
}
