package lifecycle_test

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// Scenario scripts: testdata/scripts/*.txt tell the lifecycle's main
// stories end to end, in the style of etcd raft's interaction tests. A
// script is a sequence of blocks:
//
//	command key=value ...
//	----
//	expected output
//	<blank line>
//
// Lines starting with # outside a block's output are comments. The runner
// plays the shell of one machine against a tiny in-test provider
// (script_env_test.go lists the commands) and compares each command's
// output with the expected one. After a change of behaviour, regenerate the
// outputs and review the diff:
//
//	go test ./lifecycle/ -run Scripts -update-scripts

var scriptUpdate = flag.Bool("update-scripts", false, "rewrite the expected outputs of testdata/scripts/*.txt")

func TestScripts(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "scripts", "*.txt"))
	require.NoError(t, err)
	require.NotEmpty(t, files, "no scripts found")
	for _, f := range files {
		t.Run(strings.TrimSuffix(filepath.Base(f), ".txt"), func(t *testing.T) { scriptRunFile(t, f) })
	}
}

// scriptBlock is one command of a script and its expected output.
type scriptBlock struct {
	line int    // the command's line number, for messages
	cmd  string // the command line
	want string // the expected output, without the final newline
}

// scriptChunk is either a run of verbatim lines (comments, blank lines) or
// a block; the rewrite writes chunks back in order.
type scriptChunk struct {
	raw   []string
	block *scriptBlock
}

// scriptParse splits a script into chunks.
func scriptParse(path, text string) ([]scriptChunk, error) {
	lines := strings.Split(strings.TrimSuffix(text, "\n"), "\n")
	var chunks []scriptChunk
	verbatim := func(l string) {
		if n := len(chunks); n > 0 && chunks[n-1].block == nil {
			chunks[n-1].raw = append(chunks[n-1].raw, l)
			return
		}
		chunks = append(chunks, scriptChunk{raw: []string{l}})
	}
	for i := 0; i < len(lines); i++ {
		l := lines[i]
		if strings.TrimSpace(l) == "" || strings.HasPrefix(l, "#") {
			verbatim(l)
			continue
		}
		if i+1 >= len(lines) || lines[i+1] != "----" {
			return nil, fmt.Errorf("%s:%d: command %q is not followed by a line ----", path, i+1, l)
		}
		b := &scriptBlock{line: i + 1, cmd: l}
		var out []string
		for i += 2; i < len(lines) && lines[i] != ""; i++ {
			out = append(out, lines[i])
		}
		// lines[i] is the blank line ending the block (or the end).
		b.want = strings.Join(out, "\n")
		chunks = append(chunks, scriptChunk{block: b})
	}
	return chunks, nil
}

// scriptRunFile runs one script, reporting every output that differs, or
// rewriting them with -update-scripts.
func scriptRunFile(t *testing.T, path string) {
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	chunks, err := scriptParse(path, string(data))
	require.NoError(t, err)
	env := newScriptEnv(t)
	var out strings.Builder
	for _, c := range chunks {
		if c.block == nil {
			for _, l := range c.raw {
				out.WriteString(l + "\n")
			}
			continue
		}
		b := c.block
		cmd, err := scriptParseCommand(b.cmd)
		if err != nil {
			t.Fatalf("%s:%d: %v", path, b.line, err)
		}
		got, err := env.handle(cmd)
		if err != nil {
			t.Fatalf("%s:%d: %s: %v\n--- the script's output so far:\n%s", path, b.line, b.cmd, err, out.String())
		}
		got = strings.TrimRight(got, "\n")
		if got == "" {
			got = "ok"
		}
		if slices.Contains(strings.Split(got, "\n"), "") {
			t.Fatalf("%s:%d: %s: output holds a blank line, which would end the block:\n%s", path, b.line, b.cmd, got)
		}
		if !*scriptUpdate && got != b.want {
			t.Errorf("%s:%d: %s\n--- want\n%s\n--- got\n%s", path, b.line, b.cmd, b.want, got)
		}
		out.WriteString(b.cmd + "\n----\n" + got + "\n\n")
	}
	if *scriptUpdate {
		text := strings.TrimRight(out.String(), "\n") + "\n"
		require.NoError(t, os.WriteFile(path, []byte(text), 0o644))
	}
}

// scriptCmd is a parsed command line: its name, positional words and
// key=value arguments. Handlers take what they use; an argument no handler
// took is an error, so a typo in a script never goes unnoticed.
type scriptCmd struct {
	name string
	pos  []string
	args map[string]string
	used map[string]bool
}

// scriptParseCommand splits a command line into words; a value may be
// double-quoted (Go syntax) to hold spaces: msg="no capacity left".
func scriptParseCommand(line string) (*scriptCmd, error) {
	var words []string
	s := strings.TrimSpace(line)
	for s != "" {
		end := strings.IndexAny(s, " \t")
		if q := strings.Index(s, `"`); q >= 0 && (end < 0 || q < end) {
			// A quoted part: find its closing quote.
			rest := s[q:]
			n := 1
			for n < len(rest) && rest[n] != '"' {
				if rest[n] == '\\' {
					n++
				}
				n++
			}
			if n >= len(rest) {
				return nil, fmt.Errorf("unterminated quote in %q", line)
			}
			unq, err := strconv.Unquote(rest[:n+1])
			if err != nil {
				return nil, fmt.Errorf("bad quoted value in %q: %v", line, err)
			}
			word := s[:q] + unq
			s = s[q+n+1:]
			if s != "" && s[0] != ' ' && s[0] != '\t' {
				return nil, fmt.Errorf("text after a closing quote in %q", line)
			}
			words = append(words, word)
		} else if end < 0 {
			words, s = append(words, s), ""
		} else {
			words, s = append(words, s[:end]), s[end:]
		}
		s = strings.TrimLeft(s, " \t")
	}
	c := &scriptCmd{name: words[0], args: map[string]string{}, used: map[string]bool{}}
	for _, w := range words[1:] {
		k, v, ok := strings.Cut(w, "=")
		if !ok {
			c.pos = append(c.pos, w)
			continue
		}
		if _, dup := c.args[k]; dup {
			return nil, fmt.Errorf("argument %s given twice", k)
		}
		c.args[k] = v
	}
	return c, nil
}

// has reports whether argument k was given, and marks it used.
func (c *scriptCmd) has(k string) bool {
	_, ok := c.args[k]
	c.used[k] = true
	return ok
}

// str returns argument k, or def when it was not given.
func (c *scriptCmd) str(k, def string) string {
	if c.has(k) {
		return c.args[k]
	}
	return def
}

// unused reports arguments no handler took.
func (c *scriptCmd) unused() error {
	var extra []string
	for k := range c.args {
		if !c.used[k] {
			extra = append(extra, k)
		}
	}
	if len(extra) > 0 {
		slices.Sort(extra)
		return fmt.Errorf("unknown argument(s) %s", strings.Join(extra, ", "))
	}
	return nil
}
