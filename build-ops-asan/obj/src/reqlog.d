build-ops-asan/obj/src/reqlog.o: src/reqlog.c src/accesslog.h \
 src/metrics.h src/reqlog.h
src/accesslog.h:
src/metrics.h:
src/reqlog.h:
