package webfetch

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// chromeAttrSimple is the plain statement of chromeAttr's rule, written
// apart from it (chromeAttr's long-name path, chromeName, is what it
// checks too), to check the allocation-free version against.
func chromeAttrSimple(v string) chromeLevel {
	level := notChrome
	asciiLower := func(r rune) rune {
		if 'A' <= r && r <= 'Z' {
			return r + 'a' - 'A'
		}
		return r
	}
	for _, name := range regexp.MustCompile(`[ \t\n\r\f\v]+`).Split(v, -1) {
		if name == "" {
			continue
		}
		l := strings.Map(asciiLower, name)
		level = max(level, chromeWords[l], chromeNames[strings.ReplaceAll(strings.ReplaceAll(l, "-", ""), "_", "")])
		for _, part := range regexp.MustCompile(`[-_]`).Split(l, -1) {
			level = max(level, chromeWords[part])
		}
	}
	return level
}

func TestChromeAttr(t *testing.T) {
	t.Parallel()
	tests := []struct {
		v    string
		want chromeLevel
	}{
		{"sidebar", weakChrome},
		{"SideBar", weakChrome},
		{"main-content sidebar-left", weakChrome},
		{"site_header", strongChrome},
		{"Site-Header", strongChrome},
		{"story-related", weakChrome},
		{"cookie_banner", strongChrome},
		{"ad-slot ad-slot--inline", strongChrome},
		{"jp-relatedposts", weakChrome},
		{"relatedPosts", weakChrome},
		{"sharing-economy-basics", weakChrome},
		{"share-buttons cookie-notice", strongChrome},
		{"content article", notChrome},
		{"navigational", notChrome},
		{"downloads head", notChrome},
		{"", notChrome},
		{"   ", notChrome},
		{"a-very-long-class-name-that-goes-past-the-sixty-four-byte-buffer-sidebar", weakChrome},
		{"a-very-long-class-name-that-goes-past-the-sixty-four-byte-buffer-ads", strongChrome},
		{"a-very-long-class-name-that-goes-past-the-sixty-four-byte-buffer-content", notChrome},
		{"x\tnav\ny", weakChrome},
		{"--__--", notChrome},
	}
	for _, tc := range tests {
		if got := chromeAttr(tc.v); got != tc.want {
			t.Errorf("chromeAttr(%q) = %v, want %v", tc.v, got, tc.want)
		}
		if got := chromeAttrSimple(tc.v); got != tc.want {
			t.Errorf("chromeAttrSimple(%q) = %v, want %v", tc.v, got, tc.want)
		}
	}
}

func FuzzChromeAttr(f *testing.F) {
	for _, s := range []string{"sidebar", "Site-Header x", "nav_bar", "a b\tc", strings.Repeat("x-", 40) + "ads", "share ad"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, v string) {
		if got, want := chromeAttr(v), chromeAttrSimple(v); got != want {
			t.Fatalf("chromeAttr(%q) = %v, the plain rule says %v", v, got, want)
		}
	})
}

func TestSlug(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"Menu configuration¶":      "menu-configuration",
		"menu_configuration":       "menu-configuration",
		"  Related -- Work  ":      "related-work",
		"Résumé 2":                 "r-sum-2",
		"":                         "",
		"¶":                        "",
		"Navigation events (v4.2)": "navigation-events-v4-2",
	} {
		if got := slug(in); got != want {
			t.Errorf("slug(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestExtractionKeepsContent: the pages of testdata/pages modelled on a
// WordPress post, a news article, a Sphinx manual and a Hugo blog keep
// their sections whose id or class holds a chrome word, and still lose the
// chrome around them.
func TestExtractionKeepsContent(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		page string
		want []string // sentences of the content
		not  []string // text of the chrome
	}{
		{"blog-sharing-economy", []string{
			"## How the sharing economy works",
			"At its simplest, a sharing platform does three jobs.",
			"Standing between strangers means absorbing risk.",
			"## Reputation as collateral",
			"The weakness is inflation.",
			"## What changed",
		}, []string{"We use cookies", "Skip to content", "Share this:", "Twitter", "Related", "Why every rating is five stars",
			"Get new essays by email", "Recent Posts", "Proudly powered"}},
		{"news-social-media", []string{
			"# Ferry operators halt crossings after storm damages harbour wall",
			"## Navigation through the sound",
			"Pilots will survey the channel at low water on Tuesday.",
			"## Residents turn to social media",
			"Within hours of the announcement, islanders had organised on social media",
			"“After that the island eats toast from the freezer.”",
			"## What happens next",
		}, []string{"personalised advertising", "Share on X", "Comments (48)", "Related coverage", "Winter ferry timetable",
			"Advertisement", "Continue reading below", "Recommended for you", "Doctors stunned", "Most read", "All rights reserved"}},
		{"docs-menus-and-sidebars", []string{
			"# Menus and sidebars",
			"## Menu configuration",
			"A menu is declared in `trellis.toml` under the `[menu]` table.",
			"page = \"reports\"",
			"## Sidebar options",
			"| `collapsible` | `true`  | Groups can be folded away. |",
			"## Navigation events",
			"a handler that returns `false` cancels the move.",
			"## Related settings",
			"See [Layout width][1] for the space the sidebar takes",
		}, []string{"Search docs", "User guide", "Theming", "Previous", "Next", "Copyright", "Built with"}},
		{"blog-layout-with-sidebar", []string{
			"# Caching build artefacts across CI runners",
			"Most continuous integration setups throw away everything",
			"## What we cache",
			"key = sha256(command + input_digests + toolchain_version)",
			"## Related work",
			"ccache has cached C compiler outputs",
			"## Two mistakes",
			"we hashed contents instead.",
		}, []string{"Posts", "Talks", "Share on Mastodon", "Post to the news site", "Notes from a build engineer", "Tags", "bazel",
			"Recent posts", "Hermetic toolchains", "RSS"}},
	} {
		b, err := os.ReadFile(filepath.Join("testdata", "pages", tc.page+".html"))
		if err != nil {
			t.Fatal(err)
		}
		t.Run(tc.page, func(t *testing.T) {
			checkText(t, convertHTML(b, "https://pages.test/").Text, tc.want, tc.not)
		})
	}
}

// TestChromeRules: what a chrome word in a class or id decides, element
// by element.
func TestChromeRules(t *testing.T) {
	t.Parallel()
	prose := strings.Repeat("This paragraph is part of the article and says something worth reading about the subject at hand. ", 6)
	links := `<ul><li><a href="/a">First related story</a></li><li><a href="/b">Second related story</a></li><li><a href="/c">Third related story</a></li></ul>`
	for _, tc := range []struct {
		name string
		html string
		want []string
		not  []string
	}{
		{"a weak word with prose is kept", `<div id="sharing-economy"><h2>The sharing economy</h2><p>` + prose + `</p></div>`,
			[]string{"## The sharing economy", "worth reading"}, nil},
		{"a weak word with only links goes", `<p>Body text.</p><div class="related-stories"><h3>More</h3>` + links + `</div>`,
			[]string{"Body text."}, []string{"related story", "More"}},
		{"a weak word with a short text goes", `<p>Body text.</p><div class="newsletter-box"><p>Sign up for our newsletter and get every story in your inbox, free.</p></div>`,
			[]string{"Body text."}, []string{"Sign up"}},
		{"a strong word goes even with prose", `<p>Body text.</p><div class="cookie-notice"><p>` + prose + `</p></div>`,
			[]string{"Body text."}, []string{"worth reading"}},
		{"ad as a part", `<p>Body text.</p><div class="ad-slot">Advertisement</div><div id="top_ad">Buy now</div>`,
			[]string{"Body text."}, []string{"Advertisement", "Buy now"}},
		{"teasers with links go", `<p>Body text.</p><div class="relatedPosts">` + strings.Repeat(`<h4><a href="/p">A related post with a longer title</a></h4><p>A short teaser of that post, cut after a few words…</p>`, 4) + `</div>`,
			[]string{"Body text."}, []string{"teaser", "related post"}},
		{"long teasers, none a paragraph of prose, go", `<p>Body text.</p><div class="related">` + strings.Repeat(`<h4><a href="/p">Another post</a></h4><p>A teaser of that post that runs on for a while, long enough to look like writing, yet it stops short of thirty words…</p>`, 6) + `</div>`,
			[]string{"Body text."}, []string{"teaser", "Another post"}},
		{"a paragraph beside many links goes", `<p>Body text.</p><div class="sidebar"><p>` + strings.Repeat("word ", 45) + `</p>` + strings.Repeat(links, 6) + `</div>`,
			[]string{"Body text."}, []string{"word word", "related story"}},
		{"headings keep their slug ids", `<h2 id="navigation">Navigation</h2><p>Text about navigation.</p><h3 class="share-heading" id="related-work">Related work</h3><p>Earlier work.</p>`,
			[]string{"## Navigation", "### Related work", "Earlier work."}, nil},
		{"a section whose id is its heading's slug is kept", `<section id="menu-options"><h2>Menu options¶</h2><p>Set <code>menu.width</code>.</p></section>`,
			[]string{"## Menu options", "Set `menu.width`."}, nil},
		{"a slug section of links goes", `<p>Body text.</p><section id="related-posts"><h2>Related posts</h2>` + links + `</section>`,
			[]string{"Body text."}, []string{"related story"}},
		{"an id that is not the heading's slug goes", `<p>Body text.</p><div id="menu"><h2>Options</h2><p>Short text.</p></div>`,
			[]string{"Body text."}, []string{"Options"}},
		{"a wrapper named after its sidebar keeps the article", `<div class="page has-sidebar"><div class="post"><p>` + prose + `</p><p>` + prose + `</p></div><div class="sidebar"><p>About me.</p>` + links + `</div></div>`,
			[]string{"worth reading"}, []string{"About me", "related story"}},
		{"code classes are languages", `<pre class="language-nav"><code class="lang-ads">x := 1</code></pre>`,
			[]string{"x := 1"}, nil},
		{"adjacent lists are two lists, without the converter's marker", `<ul><li>a</li></ul><ul><li>b</li></ul><ol><li>c</li></ol><!-- x --><ol><li>d</li></ol>`,
			[]string{"- a\n\n- b\n\n1. c\n\n1. d"}, []string{"THE END", "<!--"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			checkText(t, convertHTML([]byte(tc.html), "https://site.test/").Text, tc.want, tc.not)
		})
	}
}

// checkText fails t for each of want that text lacks and each of not that
// it holds.
func checkText(t *testing.T, text string, want, not []string) {
	t.Helper()
	for _, w := range want {
		if !strings.Contains(text, w) {
			t.Errorf("missing %q in:\n%s", w, text)
		}
	}
	for _, n := range not {
		if strings.Contains(text, n) {
			t.Errorf("unexpected %q in:\n%s", n, text)
		}
	}
}
