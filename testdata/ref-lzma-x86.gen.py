# Generates calls.c: many small functions that call each other, so that
# the compiled code is full of CALL instructions with varied targets.
import random
r = random.Random(14)
N = 1500
out = ['#include <stdio.h>', '#include <stdlib.h>']
for i in range(N):
    out.append(f'int f{i}(int x);')
for i in range(N):
    callees = [r.randrange(N) for _ in range(4)]
    body = ' '.join(f'if ((x & {1 << k}) && x < {i}) x += f{c}(x >> {k + 1});' for k, c in enumerate(callees))
    out.append(f'int f{i}(int x) {{ {body} if (x % {r.randrange(3, 97)} == 0) printf("f{i} %d\\n", x); return x * {r.randrange(3, 99)} + {i}; }}')
out.append('int main(int argc, char **argv) { int s = 0; for (int i = 1; i < argc; i++) s += f0(atoi(argv[i])); return s & 1; }')
print('\n'.join(out))
