/* The floor of a syslog udp datagram from C (bench/edge.ts): `count` datagrams of `bytes` bytes sent on a
 * connected socket to 127.0.0.1:<port>; prints the process's CPU time over the loop (user + system, µs). */
#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>

static long cpu(void) {
  struct rusage u;
  getrusage(RUSAGE_SELF, &u);
  return (u.ru_utime.tv_sec + u.ru_stime.tv_sec) * 1000000L + u.ru_utime.tv_usec + u.ru_stime.tv_usec;
}

int main(int argc, char **argv) {
  if (argc != 4) return 2;
  int port = atoi(argv[1]);
  long count = atol(argv[2]);
  size_t bytes = (size_t)atol(argv[3]);
  char *message = malloc(bytes);
  memset(message, 'x', bytes);
  int s = socket(AF_INET, SOCK_DGRAM, 0);
  struct sockaddr_in to = {0};
  to.sin_family = AF_INET;
  to.sin_port = htons(port);
  to.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (connect(s, (struct sockaddr *)&to, sizeof to) != 0) return 1;
  long before = cpu();
  for (long i = 0; i < count; i++) send(s, message, bytes, 0);
  printf("%ld\n", cpu() - before);
  return 0;
}
