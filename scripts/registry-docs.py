#!/usr/bin/env python3
"""Regenerates the registry tables in docs/scenarios.md from `tributary list --markdown`.

Uses `cargo run` (a debug build) unless TRIBUTARY_BIN names a built binary, e.g.
`TRIBUTARY_BIN=target/release/tributary python3 scripts/registry-docs.py`."""
import os, re, subprocess, sys
root = sys.argv[1] if len(sys.argv) > 1 else '.'
p = f'{root}/docs/scenarios.md'
s = open(p).read()
for tag in re.findall(r'<!-- registry:(\w+) -->', s):
    cmd = [os.environ['TRIBUTARY_BIN']] if os.environ.get('TRIBUTARY_BIN') else ['cargo', 'run', '-q', '--']
    md = subprocess.run(cmd + ['list', tag, '--markdown'], cwd=root,
                        capture_output=True, text=True, check=True).stdout.strip() + '\n'
    s = re.sub(r'(<!-- registry:%s -->\n).*?(<!-- /registry -->)' % tag,
               lambda m: m.group(1) + md + m.group(2), s, flags=re.S)
open(p, 'w').write(s)
