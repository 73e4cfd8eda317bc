package kubeshell

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// MaxNote is the longest note the events API accepts, in bytes.
const MaxNote = 1024

// Sentence returns text trimmed, with its first letter upper-cased and
// ending in a full stop; "" for an empty text.
func Sentence(text string) string {
	text = strings.TrimSpace(text)
	if text == "" {
		return ""
	}
	text = strings.ToUpper(text[:1]) + text[1:]
	if !strings.HasSuffix(text, ".") {
		text += "."
	}
	return text
}

// CutNote cuts a note to MaxNote bytes at a character boundary, ending it
// with "…" when it cuts.
func CutNote(note string) string {
	if len(note) <= MaxNote {
		return note
	}
	cut := MaxNote - len("…")
	for cut > 0 && !utf8.RuneStart(note[cut]) {
		cut--
	}
	return note[:cut] + "…"
}

// ReasonEvictionBlocked is the reason of the Warning event a controller
// records on a machine whose node's drain a disruption budget holds up.
const ReasonEvictionBlocked = "EvictionBlocked"

// maxBlockedPods is how many refused pods an EvictionBlocked note names.
const maxBlockedPods = 3

// EvictionBlockedNote is the note of a ReasonEvictionBlocked event: the
// first pods of blocked (as Drain returns them) and how many more.
func EvictionBlockedNote(node string, blocked []string) string {
	more := ""
	if n := len(blocked) - maxBlockedPods; n > 0 {
		blocked, more = blocked[:maxBlockedPods], fmt.Sprintf("; and %d more", n)
	}
	return CutNote(fmt.Sprintf("The drain of node %s waits: evicting %s%s. It is asked again every round until the drain timeout forces it.",
		node, strings.Join(blocked, "; "), more))
}
