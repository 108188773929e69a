"""Entry point for `pulumi up -s <stack>`: the spec is the stack's `provision:cluster` config."""

from provision.engine.program import main

main()
