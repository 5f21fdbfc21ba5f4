build-ops-asan/obj/replica/examples/echo.o: replica/examples/echo.c \
 replica/replica.h
replica/replica.h:
