// Package doccheck reads the project's Markdown pages (README.md and
// docs/*.md) for the tests that keep them true: the fenced shell blocks and
// the `sandboxed …` command lines in them, the synopses and inline code
// that name commands and flags, and the relative links with their anchors.
//
// It parses; it judges nothing. The judging is done where the facts are:
// cmd/sandboxed checks each command line against the CLI's own commands and
// flags, and the e2e suite runs the blocks marked runnable against the
// built binary. A block is runnable when its info string is "sh run"
// (GitHub highlights it by its first word, sh):
//
//	```sh run
//	sandboxed run examples/tools/hello.yaml NAME=Ada
//	```
//
// Every command of a runnable block must exit 0 in a fresh directory that
// holds the repository's README.md, docs/ and examples/.
//
// The package is for tests only: nothing outside a _test.go file imports
// it.
package doccheck

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"

	"mvdan.cc/sh/v3/expand"
	"mvdan.cc/sh/v3/syntax"
)

// Page is one Markdown file, by its path relative to the repository root.
type Page struct {
	Path string // e.g. "docs/tools.md"
	Text string
}

// Pages reads README.md and every docs/*.md under root, in that order.
func Pages(root string) ([]Page, error) {
	paths := []string{"README.md"}
	docs, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		return nil, err
	}
	sort.Strings(docs)
	for _, d := range docs {
		rel, err := filepath.Rel(root, d)
		if err != nil {
			return nil, err
		}
		paths = append(paths, filepath.ToSlash(rel))
	}
	var pages []Page
	for _, p := range paths {
		b, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(p)))
		if err != nil {
			return nil, err
		}
		pages = append(pages, Page{Path: p, Text: string(b)})
	}
	return pages, nil
}

// Block is one fenced code block.
type Block struct {
	Page     string
	Line     int    // of the first line inside the fence, 1-based
	Lang     string // the info string's first word: "sh", "yaml", "" …
	Runnable bool   // the info string is "sh run"
	Text     string // the lines inside the fence
}

// Where names the block for a message: PAGE:LINE.
func (b Block) Where() string { return fmt.Sprintf("%s:%d", b.Page, b.Line) }

// Blocks returns the fenced code blocks of p (``` fences; an unclosed
// fence runs to the end of the page).
func Blocks(p Page) []Block {
	var blocks []Block
	var cur *Block
	var body strings.Builder
	sc := bufio.NewScanner(strings.NewReader(p.Text))
	sc.Buffer(make([]byte, 0, 64*1024), 1<<20)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		trimmed := strings.TrimSpace(line)
		if cur == nil {
			if info, ok := strings.CutPrefix(trimmed, "```"); ok {
				fields := strings.Fields(info)
				cur = &Block{Page: p.Path, Line: n + 1}
				if len(fields) > 0 {
					cur.Lang = fields[0]
				}
				cur.Runnable = len(fields) == 2 && fields[0] == "sh" && fields[1] == "run"
				body.Reset()
			}
			continue
		}
		if trimmed == "```" {
			cur.Text = body.String()
			blocks = append(blocks, *cur)
			cur = nil
			continue
		}
		body.WriteString(line)
		body.WriteByte('\n')
	}
	if cur != nil {
		cur.Text = body.String()
		blocks = append(blocks, *cur)
	}
	return blocks
}

// Invocation is one `sandboxed` command in a shell block: its arguments
// after the program's name, with quotes removed.
type Invocation struct {
	Where string // PAGE:LINE
	Prog  string // as written: sandboxed, ./bin/sandboxed, sandboxed-core …
	Args  []string
}

// progs are the names a command line may call the CLI by.
var progs = map[string]bool{
	"sandboxed": true, "./bin/sandboxed": true, "bin/sandboxed": true,
	"sandboxed-core": true, "bin/sandboxed-core": true, "./bin/sandboxed-core": true,
	"sandboxed-kubernetes": true, "bin/sandboxed-kubernetes": true,
}

// Invocations parses a shell block and returns every call of the CLI in
// it, also those behind sudo, in pipelines and in && lists. A block that is
// not valid shell is an error: a shell block is meant to be pasted.
func Invocations(b Block) ([]Invocation, error) {
	f, err := syntax.NewParser(syntax.KeepComments(false)).Parse(strings.NewReader(b.Text), b.Page)
	if err != nil {
		return nil, fmt.Errorf("%s: the block is not valid shell: %w", b.Where(), err)
	}
	var out []Invocation
	var werr error
	syntax.Walk(f, func(n syntax.Node) bool {
		call, ok := n.(*syntax.CallExpr)
		if !ok || len(call.Args) == 0 || werr != nil {
			return true
		}
		words := make([]string, 0, len(call.Args))
		for _, w := range call.Args {
			s, err := expand.Literal(nil, w)
			if err != nil {
				werr = fmt.Errorf("%s:%d: %w", b.Page, b.Line+int(w.Pos().Line())-1, err)
				return false
			}
			words = append(words, s)
		}
		if words[0] == "sudo" {
			words = words[1:]
		}
		if len(words) > 0 && progs[words[0]] {
			out = append(out, Invocation{
				Where: fmt.Sprintf("%s:%d", b.Page, b.Line+int(call.Pos().Line())-1),
				Prog:  words[0],
				Args:  words[1:],
			})
		}
		return true
	})
	return out, werr
}

// Commands returns the command lines of a runnable block, one per line as
// a shell reads them (a line ending in \ goes on), comments and blank
// lines left out.
func Commands(b Block) ([]Command, error) {
	f, err := syntax.NewParser(syntax.KeepComments(false)).Parse(strings.NewReader(b.Text), b.Page)
	if err != nil {
		return nil, fmt.Errorf("%s: the block is not valid shell: %w", b.Where(), err)
	}
	var out []Command
	for _, st := range f.Stmts {
		var buf bytes.Buffer
		if err := syntax.NewPrinter().Print(&buf, st); err != nil {
			return nil, err
		}
		out = append(out, Command{Where: fmt.Sprintf("%s:%d", b.Page, b.Line+int(st.Pos().Line())-1), Text: strings.TrimSpace(buf.String())})
	}
	return out, nil
}

// Command is one statement of a runnable block.
type Command struct {
	Where string
	Text  string
}

// Synopsis is a `sandboxed …` line written as a usage summary, in a
// block without a language or in inline code: words in brackets are
// optional, `a|b` are alternatives, UPPERCASE and … are placeholders.
type Synopsis struct {
	Where string
	Text  string // after "sandboxed "
}

// inlineCode matches `…` spans on one line.
var inlineCode = regexp.MustCompile("`([^`\n]+)`")

// Synopses returns the usage lines of p: every line of a fenced block with
// no language that starts with `sandboxed ` (or `sudo sandboxed `), and
// every inline code span that does.
func Synopses(p Page) []Synopsis {
	var out []Synopsis
	for _, b := range Blocks(p) {
		if b.Lang != "" {
			continue
		}
		for i, line := range strings.Split(b.Text, "\n") {
			if rest, ok := cutProg(strings.TrimSpace(line)); ok {
				out = append(out, Synopsis{Where: fmt.Sprintf("%s:%d", p.Path, b.Line+i), Text: rest})
			}
		}
	}
	inFence := false
	for i, line := range strings.Split(p.Text, "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			inFence = !inFence
			continue
		}
		if inFence {
			continue
		}
		for _, m := range inlineCode.FindAllStringSubmatch(line, -1) {
			if rest, ok := cutProg(m[1]); ok {
				out = append(out, Synopsis{Where: fmt.Sprintf("%s:%d", p.Path, i+1), Text: rest})
			}
		}
	}
	return out
}

func cutProg(s string) (string, bool) {
	s = strings.TrimPrefix(s, "sudo ")
	for _, prog := range []string{"sandboxed ", "sandboxed-core "} {
		if rest, ok := strings.CutPrefix(s, prog); ok {
			return rest, true
		}
	}
	return "", false
}

// Link is a relative link of a page: [text](target#anchor).
type Link struct {
	Where  string
	Target string // a path relative to the page's directory; "" for the page itself
	Anchor string // without '#'; "" for none
}

var mdLink = regexp.MustCompile(`\]\(([^)\s]+)\)`)

// Links returns the relative links of p (not http(s), not mailto),
// outside fenced blocks and inline code.
func Links(p Page) []Link {
	var out []Link
	inFence := false
	for i, line := range strings.Split(p.Text, "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			inFence = !inFence
			continue
		}
		if inFence {
			continue
		}
		line = inlineCode.ReplaceAllString(line, "")
		for _, m := range mdLink.FindAllStringSubmatch(line, -1) {
			target := m[1]
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			target, anchor, _ := strings.Cut(target, "#")
			out = append(out, Link{Where: fmt.Sprintf("%s:%d", p.Path, i+1), Target: target, Anchor: anchor})
		}
	}
	return out
}

// Anchors returns the anchors GitHub makes for p's headings: lower case,
// punctuation but '-' and '_' dropped, spaces made '-', a repeated one
// suffixed -1, -2 ….
func Anchors(p Page) map[string]bool {
	seen := map[string]int{}
	out := map[string]bool{}
	inFence := false
	for _, line := range strings.Split(p.Text, "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			inFence = !inFence
			continue
		}
		if inFence || !strings.HasPrefix(line, "#") {
			continue
		}
		title := strings.TrimSpace(strings.TrimLeft(line, "#"))
		slug := Slug(title)
		if n := seen[slug]; n > 0 {
			out[fmt.Sprintf("%s-%d", slug, n)] = true
		} else {
			out[slug] = true
		}
		seen[slug]++
	}
	return out
}

// Slug is GitHub's anchor for a heading's text.
func Slug(title string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(title) {
		switch {
		case r == ' ':
			b.WriteRune('-')
		case r == '-' || r == '_':
			b.WriteRune(r)
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9', r > 127 && isLetter(r):
			b.WriteRune(r)
		}
	}
	return b.String()
}

func isLetter(r rune) bool {
	return strings.ContainsRune("àáâäçèéêëìíîïñòóôöùúûüß", r)
}
