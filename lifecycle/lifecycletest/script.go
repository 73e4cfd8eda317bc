package lifecycletest

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/purelifecycle/machine/lifecycle"
	"github.com/purelifecycle/machine/lifecycle/pass"
)

// Script is a scenario script: a story of one machine told as commands
// that play its shell and its world, each followed by the output it must
// produce, in the style of etcd raft's interaction tests. A script is a
// sequence of blocks
//
//	command key=value ...
//	----
//	expected output
//	<blank line>
//
// with comment lines (starting with #) and blank lines between them. A
// value may be double-quoted in Go syntax to hold spaces (msg="no capacity
// left"); an argument no command takes is an error, so a typo never goes
// unnoticed. A command whose output is empty prints "ok".
//
// The world of a script is one machine object with its persisted status,
// its nodes, its bootstrap token, the observer, the limiter's grant, a
// [Provider] (providerIDs tiny:///vm-N, nodes ip-10-0-0-N) and a clock
// starting at [Epoch] (T+0s in the outputs). Its configuration is
// lifecycle.DefaultConfig until the config command changes it. The
// commands:
//
//	new name=m-1 uid=u-1 [owner=ms-1] [creation-timeout=5m] [health-timeout=5m]
//	    [drain-timeout=10m] [target-cluster=false]
//	                  a new machine object (the per-machine timeouts override the config's)
//	config [creation-timeout=20m] [health-timeout=10m] [drain-timeout=2h] [wait-check=1m]
//	       [replacements=1] [no-target-cluster=true] [verify-owner=false]
//	step [persist=conflict|failed|notfound]
//	                  one decision, its status saved first (or the save failing)
//	outcome [code=NotFound msg="..." | undecodable="..."]
//	        [ran=N stopped=conflict|failed|notfound err="..."]
//	                  carry out the last decision's effects in order: the driver
//	                  call against the provider unless code or undecodable gives its
//	                  answer; effect N fails when ran is given
//	pass              a whole reconcile pass from the persisted status: pass.Run
//	                  over the script's world (through ScriptOptions.WrapShell)
//	crash             the controller restarts: a pending decision or outcome is lost
//	tick 90s          the clock moves on
//	node register [volumes=1] [pods=1] | ready | not-ready | gone | pods=N | pdb=true|false
//	     | taint=critical|startup | untaint=critical|startup
//	     | add name=... provider-id=... [machine=m-1] [ready=true]
//	                  the machine's node (register: the node of its instance);
//	                  node alone prints the nodes
//	delete            the machine's deletion is requested now
//	force-delete      and the force-deletion label set
//	observer degraded|healthy
//	grant [in-flight=N]   ask the fleet limiter, with N other machines of the
//	                      owner in flight; grant fail=true|false sets it by hand
//	spec [generation=2] [metadata=team=a,pool=web]
//	provider fail method=CreateMachine code=ResourceExhausted [times=1] [msg="..."]
//	provider drop-metadata keys=pool[,team] [times=1]
//	provider instance name=m-1 uid=u-0 [initialized=true]
//	                  scripted faults, and an instance made outside the
//	                  machine's calls; provider alone lists the instances
//	adopt phase=Terminating type=Delete state=Processing description="..."
//	      provider-id=... node=...
//	                  take over a machine MCM was managing
//	status            the persisted status, compactly
//	mcm               the phase and LastOperation record MCM would show
//	world             the object, the token, the nodes and the provider
//
// Every decision, of a step or of a pass, is checked with [Check], for an
// input it does not change and for determinism, and with
// ScriptOptions.Check; a broken promise fails the command. The script's
// world checks that a pass keeps the caller's obligations of package
// lifecycle as it meets them (a status saved before its decision's
// effects, the effects in order, none after a failed write, each decision
// made from the world as observed), and a pass that breaks one fails the
// command.
type Script struct {
	// Name names the script in messages (its file, for RunScripts).
	Name   string
	chunks []scriptChunk
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

// ParseScript parses the text of a script; name names it in messages.
func ParseScript(name, text string) (*Script, error) {
	lines := strings.Split(strings.TrimSuffix(text, "\n"), "\n")
	s := &Script{Name: name}
	verbatim := func(l string) {
		if n := len(s.chunks); n > 0 && s.chunks[n-1].block == nil {
			s.chunks[n-1].raw = append(s.chunks[n-1].raw, l)
			return
		}
		s.chunks = append(s.chunks, scriptChunk{raw: []string{l}})
	}
	for i := 0; i < len(lines); i++ {
		l := lines[i]
		if strings.TrimSpace(l) == "" || strings.HasPrefix(l, "#") {
			verbatim(l)
			continue
		}
		if i+1 >= len(lines) || lines[i+1] != "----" {
			return nil, fmt.Errorf("%s:%d: command %q is not followed by a line ----", name, i+1, l)
		}
		b := &scriptBlock{line: i + 1, cmd: l}
		var out []string
		for i += 2; i < len(lines) && lines[i] != ""; i++ {
			out = append(out, lines[i])
		}
		// lines[i] is the blank line ending the block (or the end).
		b.want = strings.Join(out, "\n")
		s.chunks = append(s.chunks, scriptChunk{block: b})
	}
	return s, nil
}

// ScriptOptions configure a run of a [Script].
type ScriptOptions struct {
	// WrapShell, when set, puts a layer of the caller's between pass.Run
	// and the script's world in the pass command: Run acts on
	// WrapShell(world), and the world checks what reaches it. A layer that
	// passes every call on unchanged leaves the script's output as it is.
	WrapShell func(pass.Shell) pass.Shell
	// Check, when set, is asked about every decision the steps and passes
	// make, with the configuration and input it was made from; an error
	// fails the command.
	Check func(cfg *lifecycle.Config, in *lifecycle.Input, d *lifecycle.Decision) error
}

// ScriptRun is what a run of a [Script] produced.
type ScriptRun struct {
	// Text is the script with the output every command produced in place
	// of the expected one: what a rewrite of the script's file writes.
	Text string
	// Diffs are the commands whose output differed from the expected one,
	// in order.
	Diffs []ScriptDiff
}

// ScriptDiff is a command whose output differed from the expected one.
type ScriptDiff struct {
	// Line is the command's line in the script.
	Line int
	// Command is the command line; Want and Got the expected and the
	// produced output.
	Command, Want, Got string
}

// String renders the difference for a test's failure message.
func (d ScriptDiff) String() string {
	return fmt.Sprintf("line %d: %s\n--- want\n%s\n--- got\n%s", d.Line, d.Command, d.Want, d.Got)
}

// Run plays the script in a new world and compares each command's output
// with the expected one. It returns an error, with the output so far, when
// a command cannot be run: a bad command, or a promise broken.
func (s *Script) Run(opts ScriptOptions) (*ScriptRun, error) {
	env := newScriptEnv(opts)
	var out strings.Builder
	run := &ScriptRun{}
	for _, c := range s.chunks {
		if c.block == nil {
			for _, l := range c.raw {
				out.WriteString(l + "\n")
			}
			continue
		}
		b := c.block
		got, err := env.run(b.cmd)
		if err != nil {
			return nil, fmt.Errorf("%s:%d: %s: %w\n--- the script's output so far:\n%s", s.Name, b.line, b.cmd, err, out.String())
		}
		if got != b.want {
			run.Diffs = append(run.Diffs, ScriptDiff{Line: b.line, Command: b.cmd, Want: b.want, Got: got})
		}
		out.WriteString(b.cmd + "\n----\n" + got + "\n\n")
	}
	run.Text = strings.TrimRight(out.String(), "\n") + "\n"
	return run, nil
}

// RunScripts runs every script file matching glob as a subtest of t named
// after the file, reporting every command whose output differs. With
// update, it rewrites each file with the outputs its commands produced
// instead; review the difference before committing it.
func RunScripts(t *testing.T, glob string, opts ScriptOptions, update bool) {
	t.Helper()
	files, err := filepath.Glob(glob)
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatalf("no script matches %s", glob)
	}
	for _, f := range files {
		t.Run(strings.TrimSuffix(filepath.Base(f), filepath.Ext(f)), func(t *testing.T) {
			data, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			s, err := ParseScript(f, string(data))
			if err != nil {
				t.Fatal(err)
			}
			run, err := s.Run(opts)
			if err != nil {
				t.Fatal(err)
			}
			if update {
				if err := os.WriteFile(f, []byte(run.Text), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			for _, d := range run.Diffs {
				t.Errorf("%s:%d: %s\n--- want\n%s\n--- got\n%s", f, d.Line, d.Command, d.Want, d.Got)
			}
		})
	}
}

// run parses and runs one command line and returns its output as a block
// holds it.
func (e *scriptEnv) run(line string) (string, error) {
	cmd, err := scriptParseCommand(line)
	if err != nil {
		return "", err
	}
	got, err := e.handle(cmd)
	if err != nil {
		return "", err
	}
	got = strings.TrimRight(got, "\n")
	if got == "" {
		got = "ok"
	}
	if slices.Contains(strings.Split(got, "\n"), "") {
		return "", fmt.Errorf("output holds a blank line, which would end the block:\n%s", got)
	}
	return got, nil
}

// scriptCmd is a parsed command line: its name, positional words and
// key=value arguments. Handlers take what they use; an argument no handler
// took is an error.
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
