/*
 * static-wait.c - a statically linked program (built -static, see the
 * Makefile) that waits for a line on stdin: `leakscope attach` must refuse
 * it (no dynamic loader to load the agent with) and leave it running.
 */
#include <unistd.h>

int main(void)
{
	char c;

	if (write(1, "ready\n", 6) != 6)
		return 1;
	while (read(0, &c, 1) == 1 && c != '\n')
		;
	return write(1, "done\n", 5) == 5 ? 0 : 1;
}
