build-ops-asan/obj/replica/examples/hello.o: replica/examples/hello.c \
 replica/replica.h
replica/replica.h:
