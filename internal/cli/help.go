package cli

import (
	"slices"
	"strings"
)

// One command's help is cut from usage, so the full text stays the one
// place each line lives: the command's entries of the "Usage:" list, then
// the sections (paragraphs after it) about the command. A section belongs
// to the commands sectionCommands names by its first words; a section it
// does not name is about weir run (its jobs and flags), and generalSections
// belong to every command.

// commands are the commands weir help knows, in usage's order.
var commands = []string{"version", "run", "jobmanager", "taskmanager", "bench", "list", "cancel", "savepoint", "stop", "nexmark", "help"}

// sectionCommands maps a section's first words to the commands it is about.
var sectionCommands = map[string][]string{
	"Sizes are":   {"run", "bench", "nexmark"},
	"Addresses (": {"run", "list", "cancel", "savepoint", "stop"},
}

// generalSections start with these words; they are about every command.
var generalSections = []string{"Aliases", "Exit codes:"}

// commandHelp returns the help of command cmd, and false when there is no
// such command.
func commandHelp(cmd string) (string, bool) {
	if !slices.Contains(commands, cmd) {
		return "", false
	}
	paras := strings.Split(usage, "\n\n")
	var b strings.Builder
	for _, p := range paras {
		if rest, ok := strings.CutPrefix(p, "Usage:\n"); ok {
			b.WriteString("Usage:\n")
			b.WriteString(usageEntries(rest, cmd))
		}
	}
	for _, p := range paras[1:] {
		if strings.HasPrefix(p, "Usage:\n") || !sectionAbout(p, cmd) {
			continue
		}
		b.WriteString("\n")
		b.WriteString(strings.TrimRight(p, "\n"))
		b.WriteString("\n")
	}
	return b.String(), true
}

// usageEntries returns the entries of the "Usage:" list (list) whose command
// is cmd: an entry is a line "  weir <cmd> ..." and the more indented lines
// after it.
func usageEntries(list, cmd string) string {
	var b strings.Builder
	in := false
	for _, l := range strings.SplitAfter(list, "\n") {
		if rest, ok := strings.CutPrefix(l, "  weir "); ok {
			in = rest == cmd || strings.HasPrefix(rest, cmd+" ") || strings.HasPrefix(rest, cmd+"\n")
		}
		if in {
			b.WriteString(l)
		}
	}
	return b.String()
}

// sectionAbout tells whether section p (a paragraph of usage after the
// "Usage:" list) is about command cmd.
func sectionAbout(p, cmd string) bool {
	for _, g := range generalSections {
		if strings.HasPrefix(p, g) {
			return true
		}
	}
	for prefix, cmds := range sectionCommands {
		if strings.HasPrefix(p, prefix) {
			return slices.Contains(cmds, cmd)
		}
	}
	return cmd == "run"
}
