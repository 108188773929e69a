"""Entry point for `pulumi up -s <stack>`: the spec is the stack's `provision:cluster` config."""

from provision.program import main

main()
