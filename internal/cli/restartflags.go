package cli

import (
	"flag"
	"fmt"
	"strings"
	"time"

	"github.com/weirhq/weir/internal/restart"
	"github.com/weirhq/weir/jobs/badrecords"
)

// restartFlags are --restart-strategy and the repeatable -D
// restart-strategy.<Flink key>=<value> of weir run.
type restartFlags struct {
	strategy string
	props    propsFlag
}

// propsFlag collects -D key=value settings in order.
type propsFlag [][2]string

func (p *propsFlag) String() string { return "" }
func (p *propsFlag) Set(v string) error {
	k, val, ok := strings.Cut(v, "=")
	if !ok || strings.TrimSpace(k) == "" {
		return fmt.Errorf("want KEY=VALUE, such as restart-strategy.fixed-delay.attempts=3")
	}
	*p = append(*p, [2]string{strings.TrimSpace(k), val})
	return nil
}

func (r *restartFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&r.strategy, "restart-strategy", "", "")
	fs.Var(&r.props, "D", "")
}

// splitDashD turns Flink's spelling -Dkey=value into -D key=value, which
// the flag package reads.
func splitDashD(args []string) []string {
	out := make([]string, 0, len(args))
	for i, a := range args {
		if a == "--" {
			return append(out, args[i:]...)
		}
		if strings.HasPrefix(a, "-D") && len(a) > 2 && a[2] != '=' {
			out = append(out, "-D", a[2:])
			continue
		}
		out = append(out, a)
	}
	return out
}

// strategyKeys maps each strategy to the prefix of its own settings.
var strategyKeys = map[string]string{
	restart.FixedDelay:       "restart-strategy.fixed-delay.",
	restart.FailureRate:      "restart-strategy.failure-rate.",
	restart.ExponentialDelay: "restart-strategy.exponential-delay.",
}

// config checks the restart flags and returns Config.Restart (nil when
// none was given: the default, exponential-delay with checkpoints, none
// without). Every mistake is a usage error naming the flag or key.
func (r *restartFlags) config(checkpointing bool) (map[string]string, error) {
	kv := map[string]string{}
	for _, p := range r.props {
		k, v := p[0], p[1]
		if k == keySlotRequestTimeout {
			continue // slotRequestTimeout's
		}
		if !strings.HasPrefix(k, restart.KeyTypeDeprecated+".") {
			return nil, usagef("-D %s: weir run takes only the restart-strategy.* settings and %s with -D (Flink's keys, such as restart-strategy.fixed-delay.attempts=3)", k, keySlotRequestTimeout)
		}
		if old, dup := kv[k]; dup && old != v {
			return nil, usagef("-D %s is given twice, as %q and %q", k, old, v)
		}
		kv[k] = v
	}
	if r.strategy == "" && len(kv) == 0 {
		return nil, nil
	}
	if r.strategy != "" {
		if t, ok := kv[restart.KeyType]; ok && !strings.EqualFold(strings.TrimSpace(t), r.strategy) {
			return nil, usagef("--restart-strategy %s and -D %s=%s disagree; give one", r.strategy, restart.KeyType, t)
		}
		kv[restart.KeyType] = r.strategy
	}
	c, err := restart.Parse(kv)
	if err != nil {
		return nil, usagef("restart strategy: %v", oneLine(err))
	}
	if c.Type == "" {
		return nil, usagef("-D restart-strategy.* settings need --restart-strategy none|fixed-delay|failure-rate|exponential-delay (the default depends on checkpointing, and its settings would be ignored)")
	}
	c = c.WithDefaults(checkpointing)
	for k := range kv {
		if k == restart.KeyType {
			continue
		}
		if prefix := strategyKeys[c.Type]; prefix == "" || !strings.HasPrefix(k, prefix) {
			return nil, usagef("-D %s does not apply to the restart strategy %s", k, c.Type)
		}
	}
	if err := c.Validate(); err != nil {
		return nil, usagef("restart strategy: %v", oneLine(err))
	}
	return kv, nil
}

// keySlotRequestTimeout is Flink's name of Config.SlotRequestTimeout.
const keySlotRequestTimeout = "slot.request.timeout"

// slotRequestTimeout returns -D slot.request.timeout (0: not given), in
// Flink's duration notation ("5 min", "30s", "500" ms).
func (r *restartFlags) slotRequestTimeout() (time.Duration, error) {
	var d time.Duration
	for _, p := range r.props {
		if p[0] != keySlotRequestTimeout {
			continue
		}
		v, err := restart.ParseDuration(p[1])
		if err == nil && v <= 0 {
			err = fmt.Errorf("must be > 0, got %q", p[1])
		}
		if err != nil {
			return 0, usagef("-D %s: %v", keySlotRequestTimeout, err)
		}
		if d != 0 && d != v {
			return 0, usagef("-D %s is given twice, as %v and %v", keySlotRequestTimeout, d, v)
		}
		d = v
	}
	return d, nil
}

func oneLine(err error) string { return strings.ReplaceAll(err.Error(), "\n", "; ") }

// badRecordFlags are --bad-records and its targets.
type badRecordFlags struct {
	policy, deadLetter, deadLetterTopic string
}

func (b *badRecordFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&b.policy, "bad-records", "fail", "")
	fs.StringVar(&b.deadLetter, "dead-letter", "", "")
	fs.StringVar(&b.deadLetterTopic, "dead-letter-topic", "", "")
}

// check validates the flags for job; target is the flag that names where
// dead letters go (dead-letter, or dead-letter-topic for Kafka).
func (b *badRecordFlags) check(fs *flag.FlagSet, target string, input, output string) (badrecords.Policy, error) {
	p, err := badrecords.ParsePolicy(b.policy)
	if err != nil {
		return p, usagef("--bad-records %q: want fail, skip or dead-letter", b.policy)
	}
	value := b.deadLetter
	if target == "dead-letter-topic" {
		value = b.deadLetterTopic
	}
	switch {
	case p == badrecords.DeadLetter && value == "":
		return p, usagef("--bad-records dead-letter needs --%s", target)
	case p != badrecords.DeadLetter && setFlag(fs, target):
		return p, usagef("--%s applies only to --bad-records dead-letter, not %s", target, p)
	case value != "" && (value == input || value == output):
		return p, usagef("--%s %q is the job's input or output; it must differ", target, value)
	}
	if target == "dead-letter-topic" && value != "" {
		if err := checkTopic(target, value); err != nil {
			return p, err
		}
	}
	return p, nil
}
